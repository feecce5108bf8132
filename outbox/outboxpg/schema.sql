-- The sqsworker outbox table (PostgreSQL 12 or later). Applied by outbox.MigratePostgres;
-- every statement is idempotent. Unqualified names: the table lives in the first schema
-- of the connection's search_path.
CREATE TABLE IF NOT EXISTS sqsworker_outbox (
    seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- publish order
    id              text        NOT NULL UNIQUE,  -- the stable entry id (dedup id, idempotency key)
    queue_url       text        NOT NULL,
    group_id        text,                         -- message group id
    ordered         boolean     NOT NULL DEFAULT false, -- FIFO queue with a group: published in order
    job             text        NOT NULL,         -- the job as producer.Prepared's JSON form
    created_at      timestamptz NOT NULL DEFAULT now(), -- the writing transaction's start
    published_at    timestamptz,                  -- set when RelayConfig keeps published rows
    failed_at       timestamptz,                  -- refused, damaged or out of attempts
    failure_reason  text,
    attempts        integer     NOT NULL DEFAULT 0,     -- failed sends so far
    next_attempt_at timestamptz NOT NULL DEFAULT now(), -- not sent again before this
    last_error      text                                -- the last failed send's error
);

-- Tables made by an earlier version: the retry columns.
ALTER TABLE sqsworker_outbox ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0;
ALTER TABLE sqsworker_outbox ADD COLUMN IF NOT EXISTS next_attempt_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE sqsworker_outbox ADD COLUMN IF NOT EXISTS last_error text;

-- Tables of schema 2 kept the job's parts in columns of their own. MigratePostgres
-- migrates such a table only when it holds no unpublished row; the old columns stay for
-- the published rows KeepPublished kept, and stop being required.
ALTER TABLE sqsworker_outbox ADD COLUMN IF NOT EXISTS job text;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'sqsworker_outbox'::regclass AND attname = 'body' AND NOT attisdropped) THEN
        ALTER TABLE sqsworker_outbox ALTER COLUMN body DROP NOT NULL, ALTER COLUMN idempotency_key DROP NOT NULL;
    END IF;
END
$$;

-- The relay's index: unpublished rows by their next attempt (failed rows are left out),
-- so entries waiting for a retry never stand in front of those due now.
CREATE INDEX IF NOT EXISTS sqsworker_outbox_due
    ON sqsworker_outbox (next_attempt_at, seq) WHERE published_at IS NULL AND failed_at IS NULL;
DROP INDEX IF EXISTS sqsworker_outbox_unpublished;

-- Finds the earlier unpublished rows of a FIFO message group, failed ones included (a
-- failed row parks its group): the relay claims only group heads.
CREATE INDEX IF NOT EXISTS sqsworker_outbox_groups
    ON sqsworker_outbox (queue_url, group_id, seq) WHERE published_at IS NULL AND ordered;
DROP INDEX IF EXISTS sqsworker_outbox_unpublished_groups;

CREATE INDEX IF NOT EXISTS sqsworker_outbox_failed
    ON sqsworker_outbox (failed_at) WHERE failed_at IS NOT NULL;

-- Wakes listening relays when a transaction that wrote entries commits.
CREATE OR REPLACE FUNCTION sqsworker_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sqsworker_outbox', '');
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS sqsworker_outbox_notify ON sqsworker_outbox;
CREATE TRIGGER sqsworker_outbox_notify AFTER INSERT ON sqsworker_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION sqsworker_outbox_notify();

-- The version MigratePostgres compares before it applies anything.
COMMENT ON TABLE sqsworker_outbox IS 'sqsworker outbox schema 3';
