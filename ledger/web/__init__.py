"""The web app: server-rendered pages whose scripts talk to the public HTTP API.

Pages never see a token: it travels in the URL fragment (never sent to the server) and
lives in the browser's session storage; every read and move is a fetch of /v1 with it.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, render_template, request

web = Blueprint("web", __name__, template_folder="templates", static_folder="static",
                static_url_path="/assets")

VARIANTS = ("loo", "rounce")
SCORINGS = ("pool", "points")


@web.get("/")
def home() -> str:
    """What this is; start a game against bots; open a table by its token."""
    return render_template("home.html", variants=VARIANTS, scorings=SCORINGS)


@web.get("/tables/<table_id>")
def table(table_id: str) -> str:
    """A seat's (or the admin's, or a spectator's) live view of one table."""
    return render_template("table.html", table_id=table_id)


@web.get("/tables/<table_id>/hands/<int:number>/replay")
def replay(table_id: str, number: int) -> str:
    """Step through a complete hand and verify its deal and hash chain in the browser."""
    return render_template("replay.html", table_id=table_id, number=number)


@web.get("/tables/<table_id>/chips")
def chips(table_id: str) -> str:
    """Where the chips went: balances and pool after every hand, who paid whom."""
    return render_template("chips.html", table_id=table_id)


CLUB_PAGES = {"home": "Club", "members": "Members", "seasons": "Seasons", "tables": "Tables",
              "standings": "Standings", "feed": "Feed", "tokens": "Tokens"}
OWNER_PAGES = {"tokens"}  # tabs shown to an owner token only


@web.get("/clubs/<club_id>")
def club(club_id: str) -> str:
    """A club's home: its name, how many members and tables, links to the rest. Every club
    page asks for a club token once (pasted, kept in this tab's session storage) and reads
    and writes through /v1/clubs with it."""
    return render_template("club_home.html", club_id=club_id, page="home", pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/members")
def club_members(club_id: str) -> str:
    """Members: search, add, rename, archive (owner or scorer)."""
    return render_template("club_members.html", club_id=club_id, page="members",
                           pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/seasons")
def club_seasons(club_id: str) -> str:
    """Seasons: list, start, close."""
    return render_template("club_seasons.html", club_id=club_id, page="seasons",
                           pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/tables")
def club_tables(club_id: str) -> str:
    """The club's tables with filters, each linked to its table (admin) view."""
    return render_template("club_tables.html", club_id=club_id, page="tables",
                           pages=CLUB_PAGES, variants=VARIANTS, scorings=SCORINGS)


@web.get("/clubs/<club_id>/tables/new")
def club_table_new(club_id: str) -> str:
    """A new club table (owner or scorer): game, deal, season, members on the seats, options;
    then each seat's link, shown once."""
    return render_template("club_table_new.html", club_id=club_id, page="tables",
                           pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/standings")
def club_standings(club_id: str) -> str:
    """The league table per season, variant and scoring, its CSV, and chips over the season."""
    return render_template("club_standings.html", club_id=club_id, page="standings",
                           pages=CLUB_PAGES, variants=VARIANTS, scorings=SCORINGS)


@web.get("/clubs/<club_id>/feed")
def club_feed(club_id: str) -> str:
    """The club's events as they happen, in words, newest first (any club token)."""
    return render_template("club_feed.html", club_id=club_id, page="feed", pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/tokens")
def club_tokens(club_id: str) -> str:
    """The club's tokens (owner): issue one (its secret shown once), list, revoke; and a
    table's spectator links."""
    return render_template("club_tokens.html", club_id=club_id, page="tokens", pages=CLUB_PAGES)


@web.get("/clubs/<club_id>/members/<member_id>/ledger")
def club_member_ledger(club_id: str, member_id: str) -> str:
    """The transfers and scores behind a member's standings row (the season, game and scoring
    carried over from the standings in the fragment), each linked to its hand's replay."""
    return render_template("club_member_ledger.html", club_id=club_id, member_id=member_id,
                           page="standings", pages=CLUB_PAGES, variants=VARIANTS,
                           scorings=SCORINGS)


def guide(name: str) -> str:
    from ledger.web.guides import GUIDES, render

    html, _ = render(name)
    return render_template("guide.html", title=GUIDES[name], body=html)


for _name in ("rules", "http", "hash-chain"):
    web.add_url_rule(f"/docs/{_name}", f"guide_{_name.replace('-', '_')}", guide,
                     defaults={"name": _name})


def wants_html() -> bool:
    """A browser asking for a page (not the API): HTML errors instead of problem+json."""
    if request.path.startswith("/v1/") or request.path.endswith(".json"):
        return False
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return best == "text/html" and request.accept_mimetypes["text/html"] > 0


def error_page(status: int, title: str, detail: str) -> Response:
    body = render_template("error.html", status=status, title=title, detail=detail)
    return Response(body, status=status, mimetype="text/html")


def register(app: Flask) -> None:
    app.register_blueprint(web)

    @app.context_processor
    def _links() -> dict[str, Any]:
        rules = {r.rule for r in app.url_map.iter_rules()}
        from ledger.web.guides import LABELS

        guides = [(f"/docs/{name}", label) for name, label in LABELS.items()
                  if f"/docs/{name}" in rules]
        return {"guides": guides, "has_docs": "/docs" in rules, "owner_pages": OWNER_PAGES}
