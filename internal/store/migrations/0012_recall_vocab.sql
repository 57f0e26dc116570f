-- How many messages hold each indexed word, read by recall to leave out of
-- a query the words so common that they would only slow the probe down
-- (BM25 gives them almost no weight anyway).
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_vocab USING fts5vocab(messages_fts, 'row');
