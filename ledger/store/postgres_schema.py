"""PostgreSQL schema migrations, applied in order by PostgresStore.upgrade()."""

from __future__ import annotations

# Each migration runs once, in one transaction, recorded in schema_migrations.
MIGRATIONS: list[tuple[int, str]] = [
    (1, """
CREATE TABLE events (
    table_id    text    NOT NULL,
    version     integer NOT NULL CHECK (version > 0),
    position    bigint  NOT NULL UNIQUE,
    type        text    NOT NULL,
    hand        integer,
    data        jsonb   NOT NULL,
    causation   text,
    -- text, not timestamptz: the hash covers this exact string
    recorded_at text    NOT NULL,
    prev_hash   text    NOT NULL,
    hash        text    NOT NULL,
    PRIMARY KEY (table_id, version)
);

CREATE TABLE idempotency (
    table_id      text    NOT NULL,
    key           text    NOT NULL,
    request_hash  text    NOT NULL,
    first_version integer NOT NULL,
    last_version  integer NOT NULL,
    PRIMARY KEY (table_id, key)
);

CREATE FUNCTION loo_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION loo_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION loo_refuse_change();
CREATE TRIGGER idempotency_append_only BEFORE UPDATE OR DELETE ON idempotency
    FOR EACH ROW EXECUTE FUNCTION loo_refuse_change();
CREATE TRIGGER idempotency_no_truncate BEFORE TRUNCATE ON idempotency
    FOR EACH STATEMENT EXECUTE FUNCTION loo_refuse_change();

-- One round trip per append; see ledger/store/postgres.py for the ordering argument:
-- position = (transaction id << 20) + index in the batch.
-- SQLSTATEs: LO200 already applied (DETAIL "first last"), LO422 key reused with another
-- request, LO409 version conflict (DETAIL actual version), LO412 prev_hash is not the
-- head's hash (DETAIL the head hash).
CREATE FUNCTION loo_append(p_table text, p_expected integer, p_prev_hash text,
                           p_events jsonb, p_key text, p_request_hash text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n integer := jsonb_array_length(p_events);
    base bigint;
    head_version integer;
    head_hash text;
    seen idempotency%ROWTYPE;
BEGIN
    IF n >= 1048576 THEN
        RAISE EXCEPTION 'at most 1048575 events per append' USING ERRCODE = 'LO413';
    END IF;
    IF p_key IS NOT NULL THEN
        SELECT * INTO seen FROM idempotency WHERE table_id = p_table AND key = p_key;
        IF FOUND THEN
            IF seen.request_hash = p_request_hash THEN
                RAISE EXCEPTION 'idempotency key already applied' USING ERRCODE = 'LO200',
                    DETAIL = seen.first_version || ' ' || seen.last_version;
            END IF;
            RAISE EXCEPTION 'idempotency key reused with another request'
                USING ERRCODE = 'LO422';
        END IF;
    END IF;
    SELECT version, hash INTO head_version, head_hash FROM events
        WHERE table_id = p_table ORDER BY version DESC LIMIT 1;
    IF coalesce(head_version, 0) <> p_expected THEN
        RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LO409',
            DETAIL = coalesce(head_version, 0)::text;
    END IF;
    IF coalesce(head_hash, repeat('0', 64)) <> p_prev_hash THEN
        RAISE EXCEPTION 'stale head hash' USING ERRCODE = 'LO412', DETAIL = head_hash;
    END IF;
    -- The transaction id only now, after the head was read: the append that wrote the
    -- head had its id before committing, so ours is higher and so are our positions.
    base := pg_current_xact_id()::text::bigint << 20;
    INSERT INTO events (table_id, version, position, type, hand, data, causation,
                        recorded_at, prev_hash, hash)
    SELECT p_table, p_expected + e.i, base + e.i, e.v->>'type',
           (e.v->>'hand')::integer, e.v->'data', e.v->>'causation', e.v->>'recorded_at',
           e.v->>'prev_hash', e.v->>'hash'
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i);
    IF p_key IS NOT NULL THEN
        INSERT INTO idempotency VALUES (p_table, p_key, p_request_hash,
                                        p_expected + 1, p_expected + n);
    END IF;
    RETURN base + 1;
END $$;
"""),
    # A random secret of this deployment (see sqlite_schema.py); gen_random_uuid() draws
    # from the server's strong random source (PostgreSQL 13+), two of them give 244 bits.
    (2, """
CREATE TABLE server_secret (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret text    NOT NULL
);
INSERT INTO server_secret
    VALUES (1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
CREATE TRIGGER server_secret_append_only BEFORE UPDATE OR DELETE ON server_secret
    FOR EACH ROW EXECUTE FUNCTION loo_refuse_change();
"""),
    # Signed checkpoints, kept apart from the events (see sqlite_schema.py).
    (3, """
CREATE TABLE checkpoints (
    table_id text    NOT NULL,
    version  integer NOT NULL,
    data     text    NOT NULL,
    PRIMARY KEY (table_id, version)
);
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION loo_refuse_change();
"""),
    # Read models (see sqlite_schema.py): derived rows, replaced as the model catches up.
    (4, """
CREATE TABLE read_model_positions (
    name     text   PRIMARY KEY,
    position bigint NOT NULL
);
CREATE TABLE read_model_rows (
    name  text NOT NULL,
    scope text NOT NULL,
    key   text NOT NULL,
    data  text NOT NULL,
    PRIMARY KEY (name, scope, key)
);
"""),
    # Webhooks: endpoint cursors and the delivery log (see sqlite_schema.py).
    (5, """
CREATE TABLE webhook_cursors (
    webhook_id  text    PRIMARY KEY,
    club_id     text    NOT NULL,
    position    bigint  NOT NULL,
    attempt     integer NOT NULL DEFAULT 0,
    retry_at    double precision,
    lease_owner text,
    lease_until double precision
);
CREATE TABLE webhook_deliveries (
    id         bigserial PRIMARY KEY,
    webhook_id text      NOT NULL,
    data       text      NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
CREATE TRIGGER webhook_deliveries_append_only BEFORE UPDATE OR DELETE ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION loo_refuse_change();
"""),
    # The first event of every stream by position (a partial index: one row a table), so a
    # club feed finds the tables begun in a span of the log before the club lists them.
    (6, """
CREATE INDEX events_first_by_position ON events (position) WHERE version = 1;
"""),
    # loo_append for a batch after others in its transaction (append_batches): positions
    # continue after the p_after events written before it, (xid << 20) + p_after + 1..n.
    # Only the first batch may continue a stream: it reads its head before the transaction
    # id is taken (ledger/store/postgres.py); the later ones begin new streams.
    (7, """
CREATE FUNCTION loo_append_after(p_table text, p_expected integer, p_prev_hash text,
                                 p_events jsonb, p_key text, p_request_hash text,
                                 p_after integer)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n integer := jsonb_array_length(p_events);
    base bigint;
    head_version integer;
    head_hash text;
    seen idempotency%ROWTYPE;
BEGIN
    IF p_after < 0 OR p_after + n >= 1048576 THEN
        RAISE EXCEPTION 'at most 1048575 events per transaction' USING ERRCODE = 'LO413';
    END IF;
    IF p_key IS NOT NULL THEN
        SELECT * INTO seen FROM idempotency WHERE table_id = p_table AND key = p_key;
        IF FOUND THEN
            IF seen.request_hash = p_request_hash THEN
                RAISE EXCEPTION 'idempotency key already applied' USING ERRCODE = 'LO200',
                    DETAIL = seen.first_version || ' ' || seen.last_version;
            END IF;
            RAISE EXCEPTION 'idempotency key reused with another request'
                USING ERRCODE = 'LO422';
        END IF;
    END IF;
    SELECT version, hash INTO head_version, head_hash FROM events
        WHERE table_id = p_table ORDER BY version DESC LIMIT 1;
    IF coalesce(head_version, 0) <> p_expected THEN
        RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LO409',
            DETAIL = coalesce(head_version, 0)::text;
    END IF;
    IF coalesce(head_hash, repeat('0', 64)) <> p_prev_hash THEN
        RAISE EXCEPTION 'stale head hash' USING ERRCODE = 'LO412', DETAIL = head_hash;
    END IF;
    base := (pg_current_xact_id()::text::bigint << 20) + p_after;
    INSERT INTO events (table_id, version, position, type, hand, data, causation,
                        recorded_at, prev_hash, hash)
    SELECT p_table, p_expected + e.i, base + e.i, e.v->>'type',
           (e.v->>'hand')::integer, e.v->'data', e.v->>'causation', e.v->>'recorded_at',
           e.v->>'prev_hash', e.v->>'hash'
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i);
    IF p_key IS NOT NULL THEN
        INSERT INTO idempotency VALUES (p_table, p_key, p_request_hash,
                                        p_expected + 1, p_expected + n);
    END IF;
    RETURN base + 1;
END $$;
"""),
]
