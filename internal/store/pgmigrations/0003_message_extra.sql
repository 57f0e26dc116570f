-- Wire-specific payloads a provider needs replayed verbatim (Anthropic
-- thinking blocks, OpenAI encrypted reasoning items), keyed by wire name.
ALTER TABLE messages ADD COLUMN extra TEXT;
