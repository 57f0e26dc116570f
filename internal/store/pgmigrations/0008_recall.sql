-- recall on PostgreSQL: the same searchable text as SQLite's messages_fts
-- (a message's content and the arguments of the tools it called, recall's
-- own calls and results left out), held as a tsvector column of messages
-- kept by a trigger and indexed with GIN. Case and Latin diacritics are
-- folded (unaccent, then the simple dictionary's lowercasing; no stemming,
-- no stop words: the store drops function words from the query itself).
-- ASCII punctuation separates words before PostgreSQL's parser sees the
-- text, so "v1.2", "notes.md" and "a/b" split into words as FTS5's
-- unicode61 tokenizer splits them instead of becoming one version, file
-- or path token.
CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TEXT SEARCH CONFIGURATION delta_recall (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION delta_recall
  ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part, numword, numhword, hword_numpart
  WITH unaccent, simple;

-- delta_recall_text is messages_recall_text's body: what of a message is
-- searchable. Escaped newlines and tabs in arguments become spaces, so a
-- word after a line break is a word of its own; tool_calls that are not a
-- JSON array are searched as they are.
CREATE FUNCTION delta_recall_text(role TEXT, name TEXT, content TEXT, tool_calls TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  args TEXT := '';
BEGIN
  IF tool_calls IS NOT NULL THEN
    BEGIN
      IF jsonb_typeof(tool_calls::jsonb) = 'array' THEN
        SELECT COALESCE(string_agg(CASE jsonb_typeof(e->'arguments') WHEN 'string' THEN e->>'arguments' ELSE (e->'arguments')::text END, ' '), '')
          INTO args FROM jsonb_array_elements(tool_calls::jsonb) e
          WHERE (e->>'name') IS DISTINCT FROM 'recall' AND e ? 'arguments';
      ELSE
        args := tool_calls;
      END IF;
    EXCEPTION WHEN others THEN
      args := tool_calls;
    END;
  END IF;
  RETURN CASE WHEN role = 'tool' AND name = 'recall' THEN '' ELSE content END || ' ' ||
    replace(replace(replace(args, '\n', ' '), '\t', ' '), '\r', ' ');
END $$;

-- delta_recall_vector is the indexed form of that text.
CREATE FUNCTION delta_recall_vector(body TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE AS $$
  SELECT to_tsvector('delta_recall'::regconfig, regexp_replace(body, '[!-/:-@\[-`{-~]+', ' ', 'g'))
$$;

ALTER TABLE messages ADD COLUMN recall tsvector;

CREATE FUNCTION messages_recall_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.recall := delta_recall_vector(delta_recall_text(NEW.role, NEW.name, NEW.content, NEW.tool_calls));
  RETURN NEW;
END $$;

CREATE TRIGGER messages_recall_insert BEFORE INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_recall_update();
CREATE TRIGGER messages_recall_change BEFORE UPDATE OF content, tool_calls ON messages
  FOR EACH ROW EXECUTE FUNCTION messages_recall_update();

-- Backfill once: every message already stored becomes searchable.
UPDATE messages SET recall = delta_recall_vector(delta_recall_text(role, name, content, tool_calls));

CREATE INDEX messages_recall ON messages USING gin (recall);
