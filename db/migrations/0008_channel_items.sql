-- 0008: channel items: open questions, action items, decisions and knowledge items
-- with an identity that survives across digests, and the state each is in.
--
-- A digest's item rows (decisions, action_items, open_questions, knowledge_items of 0001) are
-- what one window said; a channel item is the thing itself. When a digest is stored
-- (runner/channel_memory.py) each of its items either becomes a new channel item or is linked
-- to one the channel already tracks (same conversation, or strong content overlap:
-- runner/item_lifecycle.py); either way the digest row is recorded as a mention. Changes of
-- state are events, each backed by evidence from the window that made it: the messages
-- (external ids), and where the evidence is verbatim a pointer (message row, revision, span),
-- checked like every digest pointer. `at` is the evidence message's time, not the time the
-- digest ran. The creation of an item is an event too (from_status NULL), so the history of
-- an item starts with where it was first said.

CREATE TABLE channel_items (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id      bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('question', 'action_item', 'decision', 'knowledge')),
    status          text NOT NULL,
    text            text NOT NULL,
    -- The action item's owner, the question's asker (NULL: not known).
    owner           text,
    conversation_id bigint REFERENCES conversations (id) ON DELETE SET NULL,
    -- The external ids the first mention cited (where the item was said).
    message_ids     text[] NOT NULL,
    -- When it was first said: the earliest cited message's time.
    said_at         timestamptz NOT NULL,
    first_digest_id bigint REFERENCES digests (id) ON DELETE SET NULL,
    last_digest_id  bigint REFERENCES digests (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channel_items_status CHECK (
        (kind = 'question' AND status IN ('open', 'answered', 'dropped'))
        OR (kind = 'action_item' AND status IN ('open', 'done', 'cancelled'))
        OR (kind = 'decision' AND status IN ('in_force', 'superseded', 'reversed'))
        OR (kind = 'knowledge' AND status IN ('current', 'superseded', 'conflict'))
    )
);
-- The items a digest links against (a channel's open ones), and keyset pages per channel.
CREATE INDEX channel_items_channel_kind ON channel_items (channel_id, kind, status, created_at DESC, id DESC);
CREATE INDEX channel_items_kind_created ON channel_items (kind, created_at DESC, id DESC);

-- Which digest rows speak of an item: `row_id` is the row of the digest table of the item's
-- kind (open_questions, action_items, decisions, knowledge_items) at `position` in the digest.
CREATE TABLE channel_item_mentions (
    item_id    bigint NOT NULL REFERENCES channel_items (id) ON DELETE CASCADE,
    digest_id  bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    row_id     bigint NOT NULL,
    position   integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, digest_id, position)
);
CREATE INDEX channel_item_mentions_digest ON channel_item_mentions (digest_id);

CREATE TABLE channel_item_events (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id            bigint NOT NULL REFERENCES channel_items (id) ON DELETE CASCADE,
    from_status        text,
    to_status          text NOT NULL,
    at                 timestamptz NOT NULL,
    evidence_ids       text[] NOT NULL CHECK (cardinality(evidence_ids) > 0),
    pointer_message_id bigint REFERENCES messages (id) ON DELETE SET NULL,
    pointer_revision   integer,
    pointer_char_start integer CHECK (pointer_char_start >= 0),
    pointer_char_end   integer,
    pointer_quote      text,
    digest_id          bigint REFERENCES digests (id) ON DELETE SET NULL,
    -- The item that superseded or reversed this one, or that it conflicts with.
    related_item_id    bigint REFERENCES channel_items (id) ON DELETE SET NULL,
    reason             text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channel_item_events_pointer CHECK (
        pointer_message_id IS NULL OR pointer_char_end > pointer_char_start
    )
);
CREATE INDEX channel_item_events_item ON channel_item_events (item_id, at, id);
