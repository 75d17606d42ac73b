-- 0010: entities and topic profiles.
--
-- `entities` (0001) held raw knowledge-item entity refs by exact name. Now an entity is a
-- channel's canonical key (runner/entities.py: case, separators, aliases and version suffixes
-- folded; people as `@handle`) with its kind, the spellings seen (`aliases`), versions,
-- mention count (messages that mention it, counted by coverage digests: a catch-up digest
-- re-reads messages already counted) and the first/last time a message mentioned it.
-- Existing rows get the case-folded name as key; rows that fold to one key are merged.
ALTER TABLE entities DROP CONSTRAINT entities_channel_name;
ALTER TABLE entities
    ADD COLUMN key        text,
    ADD COLUMN kind       text NOT NULL DEFAULT 'name' CHECK (
        kind IN ('person', 'software', 'model', 'service', 'file', 'name')),
    ADD COLUMN aliases    text[] NOT NULL DEFAULT '{}',
    ADD COLUMN versions   text[] NOT NULL DEFAULT '{}',
    ADD COLUMN first_seen timestamptz,
    ADD COLUMN last_seen  timestamptz,
    ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
UPDATE entities SET key = lower(btrim(name)), aliases = ARRAY[name];
WITH grouped AS (
    SELECT id, min(id) OVER w AS keep, sum(mention_count) OVER w AS total,
           array_agg(name) OVER w AS names
    FROM entities WINDOW w AS (PARTITION BY channel_id, key)
)
UPDATE entities e SET mention_count = g.total, aliases = g.names
FROM grouped g WHERE e.id = g.id AND g.id = g.keep;
DELETE FROM entities e USING (
    SELECT id, min(id) OVER (PARTITION BY channel_id, key) AS keep FROM entities
) g WHERE e.id = g.id AND g.id <> g.keep;
ALTER TABLE entities ALTER COLUMN key SET NOT NULL;
ALTER TABLE entities ADD CONSTRAINT entities_channel_key UNIQUE (channel_id, key);
-- Keyset pages by mention count (a channel's, and across channels).
CREATE INDEX entities_channel_mentions ON entities (channel_id, mention_count DESC, id DESC);
CREATE INDEX entities_mentions ON entities (mention_count DESC, id DESC);

-- The messages of one digest that mention an entity (messages rows).
CREATE TABLE entity_mentions (
    entity_id   bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    digest_id   bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    message_ids bigint[] NOT NULL,
    PRIMARY KEY (entity_id, digest_id)
);
CREATE INDEX entity_mentions_digest ON entity_mentions (digest_id);

-- The digest items whose text (or owner, asker, entity refs) names an entity: an item is its
-- digest and its position in its section's table.
CREATE TABLE entity_item_refs (
    entity_id bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    digest_id bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    item_kind text NOT NULL CHECK (
        item_kind IN ('topic', 'decision', 'action_item', 'open_question', 'knowledge_item')),
    position  integer NOT NULL,
    PRIMARY KEY (entity_id, digest_id, item_kind, position)
);
CREATE INDEX entity_item_refs_digest ON entity_item_refs (digest_id);

-- A recurring topic of a channel: digest topics with the same canonical key (the entities its
-- title names, else its title's content words; runner/topic_profiles.py).
CREATE TABLE topic_profiles (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel_id    bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    key           text NOT NULL,
    title         text NOT NULL,
    mention_count integer NOT NULL DEFAULT 0,
    first_seen    timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT topic_profiles_channel_key UNIQUE (channel_id, key)
);
CREATE INDEX topic_profiles_channel_seen ON topic_profiles (channel_id, last_seen DESC, id DESC);
CREATE INDEX topic_profiles_seen ON topic_profiles (last_seen DESC, id DESC);

-- Where a profile appears: the digest, its topics' positions, the messages they cite and the
-- conversations of those messages.
CREATE TABLE topic_profile_digests (
    profile_id       bigint NOT NULL REFERENCES topic_profiles (id) ON DELETE CASCADE,
    digest_id        bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    topic_positions  integer[] NOT NULL,
    message_ids      bigint[] NOT NULL,
    conversation_ids bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (profile_id, digest_id)
);
CREATE INDEX topic_profile_digests_digest ON topic_profile_digests (digest_id);

-- The digest items (decisions, action items, open questions, knowledge items) citing a
-- message of the profile's topics in the same digest.
CREATE TABLE topic_profile_items (
    profile_id bigint NOT NULL REFERENCES topic_profiles (id) ON DELETE CASCADE,
    digest_id  bigint NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    item_kind  text NOT NULL CHECK (
        item_kind IN ('decision', 'action_item', 'open_question', 'knowledge_item')),
    position   integer NOT NULL,
    PRIMARY KEY (profile_id, digest_id, item_kind, position)
);
CREATE INDEX topic_profile_items_digest ON topic_profile_items (digest_id);
