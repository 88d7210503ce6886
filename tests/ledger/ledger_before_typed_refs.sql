-- A SQLite ledger as callgate wrote it before call references were typed (its `.dump`):
-- conversation "chat-before", one turn with a call read from the text (an OpenAI stream,
-- id "chatcmpl-before") and one turn with an id-less native call (a Gemini stream,
-- responseId "resp-before"), each answered "18 C in <city>" by worker-before.
CREATE TABLE callgate_ledger (
    conversation TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (conversation, key)
) WITHOUT ROWID;
INSERT INTO "callgate_ledger" VALUES('chat-before','c18ada04ed8c68c242fafa70a7cafd7a68739af338b8b16f71351fb6619b7f00','done','["done","worker-before",1796603678.1992419,"18 C in Oslo",false,false]');
INSERT INTO "callgate_ledger" VALUES('chat-before','ce6acae18d680f81c80d45af365b27ad0872f3d145d2439614101acbe73492f1','done','["done","worker-before",1796603678.2324557,"18 C in Rome",false,false]');
