-- 0017: people, the handles they write and are named by in the channels, and how far each has
-- read each channel (the default start of their catch-up).
--
-- A handle is stored folded (`handle_key`: case-folded, a leading `@`, a Discord discriminator
-- and IRC decorations such as a trailing `_` or `|away` removed: runner/catchup/handles.py), so
-- `Alice`, `@alice` and `alice_` are one handle. A handle maps to one person: in every channel
-- (channel_id NULL) or in one channel only, where the same nick is someone else elsewhere.

CREATE TABLE people (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX people_name ON people (lower(name));

CREATE TABLE person_handles (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person_id  bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    handle     text NOT NULL,
    handle_key text NOT NULL CHECK (length(handle_key) BETWEEN 2 AND 120),
    -- NULL: the handle is this person's in every channel.
    channel_id bigint REFERENCES channels (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- One person per handle and scope (0 stands for "every channel" so NULLs collide too).
CREATE UNIQUE INDEX person_handles_key ON person_handles (handle_key, coalesce(channel_id, 0));
CREATE INDEX person_handles_person ON person_handles (person_id);

CREATE TABLE read_markers (
    person_id  bigint NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    read_until timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (person_id, channel_id)
);
