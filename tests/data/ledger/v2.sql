-- A slipway ledger at schema version 2, frozen: the migration tests load it and open it with
-- current code. Made by `slipway ledger import` (schema version 2) of a few rows, dumped with the
-- sqlite3 shell; .dump leaves out user_version and application_id, so they are set at the end.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE endpoints(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE CHECK(length(name) BETWEEN 1 AND 128),
  created_at INTEGER NOT NULL
);
INSERT INTO endpoints VALUES(1,'frank-small',1796315233);
INSERT INTO endpoints VALUES(2,'frank-primary',1796315233);
CREATE TABLE shapes(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE CHECK(length(hash) = 64),
  canon_version INTEGER NOT NULL,
  engine TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  canonical TEXT NOT NULL CHECK(json_valid(canonical))
);
INSERT INTO shapes VALUES(1,'7f9f596679e99c976277de4f2c89072f8688277967dcf7636a51cba38b20b663',1,'llama.cpp',1796315233,'{"ctx":524288,"engine":"llama.cpp","kv_dtype_k":"f16","kv_dtype_v":"q8_0","model":{"name":"MiMo-V2.6-Distill-Qwen-9B","quant":"q5_k_m"},"slots":2}');
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
  log_excerpt TEXT CHECK(log_excerpt IS NULL OR length(CAST(log_excerpt AS BLOB)) <= 65536), ext_id TEXT,
  CHECK((outcome = 'failed') = (failure IS NOT NULL)),
  CHECK((failure IS NULL) = (failure_class IS NULL))
);
INSERT INTO boots VALUES(1,1,1,'llama.cpp','b6000',1793527200,NULL,NULL,'ok',NULL,NULL,NULL,NULL,NULL,1796315233,NULL,'{"n_ctx":524288}',NULL,NULL,NULL);
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
, ext_id TEXT);
INSERT INTO usage VALUES(1,1,1,1,'cuda0',20190,24576,4386,'nvidia-smi',1793527500,NULL,NULL,1796315233,NULL);
CREATE TABLE battery_runs(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),
  boot_id INTEGER REFERENCES boots(id),
  url TEXT,
  started_at INTEGER,
  ms INTEGER,
  passed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  skipped INTEGER NOT NULL,
  ext_id TEXT UNIQUE,
  recorded_at INTEGER NOT NULL
);
INSERT INTO battery_runs VALUES(1,1,1,NULL,NULL,903,2,0,0,NULL,1796315233);
CREATE TABLE battery_checks(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES battery_runs(id),
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('pass', 'fail', 'skip')),
  reason TEXT,
  ms INTEGER,
  evidence TEXT CHECK(evidence IS NULL OR json_valid(evidence)),
  UNIQUE(run_id, seq)
);
INSERT INTO battery_checks VALUES(1,1,1,'readiness','pass',NULL,3,NULL);
INSERT INTO battery_checks VALUES(2,1,2,'worst_case','pass',NULL,900,NULL);
CREATE TABLE bench_runs(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),
  boot_id INTEGER REFERENCES boots(id),
  started_at INTEGER,
  chart_path TEXT,
  source_line TEXT,
  ext_id TEXT UNIQUE,
  recorded_at INTEGER NOT NULL,
  params TEXT NOT NULL CHECK(json_valid(params)),
  results TEXT NOT NULL CHECK(json_valid(results))
);
INSERT INTO bench_runs VALUES(1,1,1,NULL,NULL,NULL,NULL,1796315233,'{"concurrency":2}','{"tok_s":41.5}');
CREATE TABLE ladder_rungs(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER NOT NULL REFERENCES endpoints(id),
  ladder TEXT NOT NULL CHECK(length(ladder) >= 1),
  rung INTEGER NOT NULL CHECK(rung >= 1),
  shape_id INTEGER NOT NULL REFERENCES shapes(id),
  boot_id INTEGER REFERENCES boots(id),
  outcome TEXT NOT NULL CHECK(outcome IN ('pass', 'fail', 'refused')),
  note TEXT,
  source_line TEXT,
  ext_id TEXT UNIQUE,
  recorded_at INTEGER NOT NULL,
  UNIQUE(endpoint_id, ladder, rung)
);
CREATE TABLE rules(
  id INTEGER PRIMARY KEY,
  endpoint_id INTEGER REFERENCES endpoints(id),
  expr TEXT NOT NULL CHECK(length(expr) >= 1),
  reason TEXT NOT NULL CHECK(length(reason) >= 1),
  boot_id INTEGER REFERENCES boots(id),
  source TEXT,
  source_line TEXT,
  ext_id TEXT UNIQUE,
  created_at INTEGER NOT NULL,
  failure TEXT CHECK(failure IS NULL OR json_valid(failure))
);
INSERT INTO rules VALUES(1,2,'slots == 2','compile failure at SEQS 2',NULL,NULL,NULL,NULL,1796315233,NULL);
CREATE TABLE IF NOT EXISTS "notes"(
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL CHECK(kind IN ('ledger', 'endpoint', 'shape', 'boot', 'usage',
                                    'battery', 'bench', 'rung', 'rule')),
  subject_id INTEGER,
  text TEXT NOT NULL,
  author TEXT,
  created_at INTEGER NOT NULL,
  ext_id TEXT UNIQUE
);
INSERT INTO notes VALUES(1,'boot',1,'a v2 boot',NULL,1796315233,NULL);
CREATE INDEX boots_endpoint ON boots(endpoint_id, id);
CREATE INDEX boots_shape ON boots(shape_id);
CREATE INDEX usage_endpoint ON usage(endpoint_id, id);
CREATE INDEX usage_boot ON usage(boot_id);
CREATE INDEX usage_shape ON usage(shape_id);
CREATE UNIQUE INDEX boots_ext_id ON boots(ext_id) WHERE ext_id IS NOT NULL;
CREATE UNIQUE INDEX usage_ext_id ON usage(ext_id) WHERE ext_id IS NOT NULL;
CREATE INDEX battery_runs_endpoint ON battery_runs(endpoint_id, id);
CREATE INDEX bench_runs_endpoint ON bench_runs(endpoint_id, id);
CREATE INDEX rules_endpoint ON rules(endpoint_id);
CREATE INDEX notes_subject ON notes(kind, subject_id);
COMMIT;
PRAGMA application_id = 1397510231;
PRAGMA user_version = 2;
