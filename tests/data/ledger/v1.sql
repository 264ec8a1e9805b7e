-- A slipway ledger at schema version 1, frozen: the migration tests load it and open it with
-- current code. Made with the sqlite3 shell from migration 1 of src/ledger/schema.c plus a few rows;
-- .dump leaves out user_version and application_id, so they are set at the end.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE endpoints(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE CHECK(length(name) BETWEEN 1 AND 128),
  created_at INTEGER NOT NULL
);
INSERT INTO endpoints VALUES(1,'frank-small',1790000000);
INSERT INTO endpoints VALUES(2,'frank-primary',1790000000);
CREATE TABLE shapes(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE CHECK(length(hash) = 64),
  canon_version INTEGER NOT NULL,
  engine TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  canonical TEXT NOT NULL CHECK(json_valid(canonical))
);
INSERT INTO shapes VALUES(1,'7f9f596679e99c976277de4f2c89072f8688277967dcf7636a51cba38b20b663',1,'llama.cpp',1790000000,'{"ctx":524288,"engine":"llama.cpp","kv_dtype_k":"f16","kv_dtype_v":"q8_0","model":{"name":"MiMo-V2.6-Distill-Qwen-9B","quant":"q5_k_m"},"slots":2}');
CREATE TABLE boots(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),
  shape_id INTEGER REFERENCES shapes(id),
  engine TEXT NOT NULL,
  engine_version TEXT,
  started_at INTEGER,
  ended_at INTEGER,
  duration_ms INTEGER CHECK(duration_ms IS NULL OR duration_ms >= 0),
  outcome TEXT NOT NULL CHECK(outcome IN ('ok', 'failed')),
  failure_class TEXT,
  failure_phase TEXT,
  log_path TEXT,
  source TEXT,
  source_line TEXT,
  recorded_at INTEGER NOT NULL,
  predicted TEXT CHECK(predicted IS NULL OR json_valid(predicted)),
  report TEXT CHECK(report IS NULL OR json_valid(report)),
  failure TEXT CHECK(failure IS NULL OR json_valid(failure)),
  log_excerpt TEXT CHECK(log_excerpt IS NULL OR length(CAST(log_excerpt AS BLOB)) <= 65536),
  CHECK((outcome = 'failed') = (failure IS NOT NULL)),
  CHECK((failure IS NULL) = (failure_class IS NULL))
);
INSERT INTO boots VALUES(1,1,1,'llama.cpp','b6000',1790000000,1790000060,60000,'ok',NULL,NULL,'/var/log/x.log','slipway up',NULL,1790000061,'{"kv_cache_bytes":13421772800}','{"kv_cache_bytes":13421772800,"n_ctx":524288}',NULL,'llama_kv_cache: size = 12800.00 MiB');
INSERT INTO boots VALUES(2,2,NULL,'vllm',NULL,NULL,NULL,NULL,'failed','bad_path','load',NULL,'by hand',NULL,1790000100,NULL,NULL,'{"class":"bad_path","message":"Repo id must be in the form namespace/repo_name","phase":"load"}',NULL);
CREATE TABLE usage(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),
  boot_id INTEGER REFERENCES boots(id),
  shape_id INTEGER REFERENCES shapes(id),
  device TEXT NOT NULL CHECK(length(device) >= 1),
  used_mib INTEGER NOT NULL CHECK(used_mib >= 0),
  total_mib INTEGER NOT NULL CHECK(total_mib > 0 AND used_mib <= total_mib),
  free_mib INTEGER CHECK(free_mib IS NULL OR (free_mib >= 0 AND
                                              free_mib + used_mib <= total_mib)),
  source TEXT NOT NULL,
  taken_at INTEGER,
  note TEXT,
  source_line TEXT,
  recorded_at INTEGER NOT NULL
);
INSERT INTO usage VALUES(1,1,1,1,'CUDA0',20190,24576,4386,'nvidia-smi',1790000070,'v1 reading',NULL,1790000071);
INSERT INTO usage VALUES(2,1,NULL,NULL,'CUDA0',21684,24576,NULL,'by hand',NULL,NULL,NULL,1790000200);
CREATE TABLE notes(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage')),
  subject_id INTEGER,
  text TEXT NOT NULL,
  author TEXT,
  created_at INTEGER NOT NULL
);
INSERT INTO notes VALUES(1,'boot',1,'a v1 note','test',1790000300);
INSERT INTO notes VALUES(2,'ledger',NULL,'ledger-wide note',NULL,1790000301);
CREATE INDEX boots_endpoint ON boots(endpoint_id, id);
CREATE INDEX boots_shape ON boots(shape_id);
CREATE INDEX usage_endpoint ON usage(endpoint_id, id);
CREATE INDEX usage_boot ON usage(boot_id);
CREATE INDEX usage_shape ON usage(shape_id);
CREATE INDEX notes_subject ON notes(kind, subject_id);
COMMIT;
PRAGMA application_id = 1397510231;
PRAGMA user_version = 1;
