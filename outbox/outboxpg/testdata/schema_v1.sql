-- The sqsworker outbox table (PostgreSQL 12 or later). Applied by outbox.MigratePostgres;
-- every statement is idempotent. Unqualified names: the table lives in the first schema
-- of the connection's search_path.
CREATE TABLE IF NOT EXISTS sqsworker_outbox (
    seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- publish order
    id              text        NOT NULL UNIQUE,  -- the stable entry id (dedup id, idempotency key)
    queue_url       text        NOT NULL,
    job_type        text        NOT NULL DEFAULT '',
    body            text        NOT NULL,
    group_id        text,                         -- message group id
    ordered         boolean     NOT NULL DEFAULT false, -- FIFO queue with a group: published in order
    idempotency_key text        NOT NULL,
    delay_seconds   integer     NOT NULL DEFAULT 0,
    attributes      jsonb,                        -- {"name": {"t": "String", "v": "..."}}
    created_at      timestamptz NOT NULL DEFAULT now(), -- the writing transaction's start
    published_at    timestamptz,                  -- set when RelayConfig keeps published rows
    failed_at       timestamptz,                  -- SQS refused the entry
    failure_reason  text
);

-- The classic outbox index: unpublished rows only, in publish order (failed rows are left out).
CREATE INDEX IF NOT EXISTS sqsworker_outbox_unpublished
    ON sqsworker_outbox (seq) WHERE published_at IS NULL AND failed_at IS NULL;

-- Finds the earlier unpublished rows of a FIFO message group (the relay claims group heads).
CREATE INDEX IF NOT EXISTS sqsworker_outbox_unpublished_groups
    ON sqsworker_outbox (queue_url, group_id, seq) WHERE published_at IS NULL AND failed_at IS NULL AND ordered;

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
