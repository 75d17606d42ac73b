-- 0006: conversations: the reply structure of a channel, built when a digest reads
-- its messages (runner/conversations.py), and the conversations it makes.
--
-- `messages.parent_id` is the earlier message a message answers (NULL: it opens a
-- conversation, or it was not threaded yet); `messages.conversation_id` the conversation it
-- belongs to. A message is threaded once, by the first digest that reads it, so a conversation
-- keeps its members when a catch-up digest reads them again. A conversation is identified by
-- its first message (`root_message_id`); a later digest whose messages answer it extends it.
-- `title` is an exact span (title_char_start/end) of one of its messages at the revision read
-- (`title_message_id`, `title_revision`), so the title is cited like any pointer. `answered`:
-- someone other than the opener wrote in it. The state a client sees (conversation_states)
-- adds `ongoing`: its last message is within 30 minutes of the channel's newest message.

CREATE TABLE conversations (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id       bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    root_message_id  bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    title            text NOT NULL,
    title_message_id bigint REFERENCES messages (id) ON DELETE SET NULL,
    title_revision   integer,
    title_char_start integer CHECK (title_char_start >= 0),
    title_char_end   integer,
    participants     text[] NOT NULL,
    message_count    integer NOT NULL CHECK (message_count > 0),
    answered         boolean NOT NULL,
    first_ts         timestamptz NOT NULL,
    last_ts          timestamptz NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT conversations_root UNIQUE (root_message_id),
    CONSTRAINT conversations_title_span CHECK (
        title_message_id IS NULL OR title_char_end > title_char_start
    )
);
-- Keyset pages of a channel's conversations, newest first.
CREATE INDEX conversations_channel_first ON conversations (channel_id, first_ts DESC, id DESC);

ALTER TABLE messages
    ADD COLUMN parent_id bigint REFERENCES messages (id) ON DELETE SET NULL,
    ADD COLUMN conversation_id bigint REFERENCES conversations (id) ON DELETE SET NULL;
CREATE INDEX messages_conversation ON messages (conversation_id, ts, id)
    WHERE conversation_id IS NOT NULL;

CREATE VIEW conversation_states AS
SELECT c.*,
    CASE
        WHEN c.last_ts >= newest.ts - interval '30 minutes' THEN 'ongoing'
        WHEN c.answered THEN 'answered'
        ELSE 'unanswered'
    END AS state,
    tm.external_id AS title_message_external_id
FROM conversations c
LEFT JOIN messages tm ON tm.id = c.title_message_id
CROSS JOIN LATERAL (
    SELECT m.ts FROM messages m WHERE m.channel_id = c.channel_id ORDER BY m.ts DESC, m.id DESC
    LIMIT 1
) newest;
