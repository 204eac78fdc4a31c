"""Table options and their validation (RULES §2, §6.1, §8, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.core.errors import Invalid

VARIANTS = ("loo", "rounce")
SCORINGS = ("pool", "points")
PENALTY_MODES = ("uncapped", "fixed", "capped")
DEAL_MODES = ("shuffled", "recorded", "results")
TURN_SECONDS = (5, 3600)  # API.md: options.turn_seconds


@dataclass(frozen=True, slots=True)
class Options:
    """Everything that shapes the game at one table; validated once, at creation."""

    variant: str = "loo"
    scoring: str = "pool"
    players: int = 4
    ante: int = 5
    dealer_ante: int = 5
    penalty_mode: str = "uncapped"
    penalty_multiplier: int | None = None
    lead_trump_threshold: int = 2
    target: int = 15
    auto_deal: bool = True
    deal: str = "shuffled"
    max_hands: int | None = None  # the table closes itself once this many hands are settled
    hints: bool = False  # a seat may ask for the expert's move (GET /v1/tables/{id}/hint)
    turn_seconds: int | None = None  # the service acts for a seat that lets this many pass

    @property
    def is_rounce(self) -> bool:
        return self.variant == "rounce"

    @property
    def max_misses(self) -> int:
        """§4: a single miss with 4 players; two with 2 or 3 (Rounce: two dummies)."""
        return 1 if self.players == 4 else 2

    @property
    def miss_draw(self) -> int:
        """§4: six fresh tiles with 2-3 players, all seven with 4."""
        return 7 if self.players == 4 else 6

    @property
    def miss_discard(self) -> int:
        return self.miss_draw - 5

    @property
    def drop_allowed(self) -> bool:
        """§4: Loo allows a drop only with 3 or 4 players; Rounce allows passing with any."""
        return self.is_rounce or self.players >= 3

    def penalty_cap(self) -> int | None:
        """§8.5: the cap on a loo penalty, or None when uncapped."""
        if self.penalty_mode == "fixed":
            return 5 * self.players
        if self.penalty_mode == "capped":
            assert self.penalty_multiplier is not None
            return self.penalty_multiplier * self.players
        return None

    def to_dict(self) -> dict[str, Any]:
        penalty: dict[str, Any] = {"mode": self.penalty_mode}
        if self.penalty_mode == "capped":
            penalty["multiplier"] = self.penalty_multiplier
        return {
            "ante": self.ante,
            "dealer_ante": self.dealer_ante,
            "loo_penalty": penalty,
            "lead_trump_threshold": self.lead_trump_threshold,
            "target": self.target,
            "auto_deal": self.auto_deal,
            "hints": self.hints,
        } | ({} if self.max_hands is None else {"max_hands": self.max_hands}) | (
            {} if self.turn_seconds is None else {"turn_seconds": self.turn_seconds})


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Invalid("invalid_option", f"{field} must be a whole number from {low} to {high}",
                      field=field)
    return value


def _multiple_of_5(value: Any, field: str, low: int) -> int:
    value = _int(value, field, low, 10**6)
    if value % 5:
        # §8.2: P must stay a multiple of 5 so that a trick is worth P/5 whole chips.
        raise Invalid("invalid_option", f"{field} must be a multiple of 5 (got {value}): "
                      "the pool must always divide into five tricks", rule="8.2", field=field)
    return value


def make_options(variant: Any = "loo", scoring: Any = None, players: Any = 4,
                 options: dict[str, Any] | None = None, deal: Any = "shuffled") -> Options:
    """Validate a table's settings up front; every problem is a clear Invalid."""
    opts = dict(options or {})
    if variant not in VARIANTS:
        raise Invalid("invalid_option", f"variant must be one of {', '.join(VARIANTS)}",
                      field="variant")
    if scoring is None:
        scoring = "points" if variant == "rounce" else "pool"
    if scoring not in SCORINGS:
        raise Invalid("invalid_option", f"scoring must be one of {', '.join(SCORINGS)}",
                      field="scoring")
    if variant == "rounce" and scoring != "points":
        raise Invalid("invalid_option", "Domino Rounce is always scored in points (§9)",
                      rule="9", field="scoring")
    if deal not in DEAL_MODES:
        raise Invalid("invalid_option", f"deal must be one of {', '.join(DEAL_MODES)}",
                      field="deal")
    players = _int(players, "seats", 2, 4)
    known = {"ante", "dealer_ante", "loo_penalty", "lead_trump_threshold", "target", "auto_deal",
             "max_hands", "hints", "turn_seconds"}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise Invalid("invalid_option", f"unknown option(s): {', '.join(unknown)}",
                      field="options")
    ante = _multiple_of_5(opts.get("ante", 5), "ante", 0)
    dealer_ante = _multiple_of_5(opts.get("dealer_ante", 5), "dealer_ante", 0)
    if ante == 0 and dealer_ante == 0:
        raise Invalid("invalid_option", "ante and dealer_ante cannot both be 0: the pool "
                      "would never hold a chip", rule="8.1", field="ante")
    penalty = opts.get("loo_penalty", {"mode": "uncapped"})
    if not isinstance(penalty, dict) or penalty.get("mode") not in PENALTY_MODES:
        raise Invalid("invalid_option", 'loo_penalty must be {"mode": "uncapped"}, '
                      '{"mode": "fixed"} or {"mode": "capped", "multiplier": m}',
                      rule="8.5", field="loo_penalty")
    mode = penalty["mode"]
    extra = sorted(set(penalty) - {"mode", "multiplier"})
    if extra or (mode != "capped" and "multiplier" in penalty):
        raise Invalid("invalid_option", "loo_penalty takes a multiplier only in capped mode",
                      rule="8.5", field="loo_penalty")
    multiplier = None
    if mode == "capped":
        if "multiplier" not in penalty:
            raise Invalid("invalid_option", "capped loo_penalty needs a multiplier "
                          "(a multiple of 5, e.g. 10 or 20)", rule="8.5", field="loo_penalty")
        multiplier = _multiple_of_5(penalty["multiplier"], "loo_penalty.multiplier", 5)
    threshold = _int(opts.get("lead_trump_threshold", 2), "lead_trump_threshold", 1, 6)
    target = _int(opts.get("target", 15), "target", 1, 1000)
    auto_deal = opts.get("auto_deal", True)
    if not isinstance(auto_deal, bool):
        raise Invalid("invalid_option", "auto_deal must be true or false", field="auto_deal")
    max_hands = opts.get("max_hands")
    if max_hands is not None:
        max_hands = _int(max_hands, "max_hands", 1, 100_000)
    hints = opts.get("hints", False)
    if not isinstance(hints, bool):
        raise Invalid("invalid_option", "hints must be true or false", field="hints")
    turn_seconds = opts.get("turn_seconds")
    if turn_seconds is not None:
        turn_seconds = _int(turn_seconds, "turn_seconds", TURN_SECONDS[0], TURN_SECONDS[1])
    for name, on in (("hints", hints), ("turn_seconds", turn_seconds is not None)):
        if on and deal != "shuffled":
            raise Invalid("invalid_option", f"{name} is for shuffled tables: on recorded and "
                          "results tables the scorer enters every move", field=name)
    return Options(variant, scoring, players, ante, dealer_ante, mode, multiplier,
                   threshold, target, auto_deal, deal, max_hands, hints, turn_seconds)
