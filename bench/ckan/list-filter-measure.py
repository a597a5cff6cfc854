#!/usr/bin/env python3
"""What a CKAN 2.10/2.11 `datastore_search` csv page costs when asked with a list filter on `_id`
(`"filters": {"_id": [a+1, ..., b]}`) against the same rows asked by `offset`.

NOT part of `npm test` or `npm run bench`: run it by hand, alone on the machine.

Needs:
- a local PostgreSQL (measured on Debian's postgresql-15) and a role that may create a database
  (DSN in LIST_FILTER_DSN, default "dbname=ckan_list_filter"; the database must exist);
- Debian's python3 with python3-psycopg2 (CKAN's driver), python3-sqlparse and python3-sqlalchemy for the Python
  share of the work (CKAN's single-statement check, 2.11's literal binds), skipped when missing.

What it does: builds CKAN-shaped datastore tables of 200,000 and 1,000,000 rows (the 12 columns of the
real timings' table, `_id serial primary key`, `_full_text` filled by CKAN's trigger, kept between runs),
then runs, one at a time and warm (one unmeasured run first), CKAN's own csv-page SQL for pages asked by
OFFSET and by `_id IN (list)`, in the 2.10 form (inner page subquery, psycopg2's `mogrify` of `%s`
placeholders) and the flat form of a 2.11 source (SQLAlchemy's literal binds of `:value_N`), checks the
two pages are the same bytes, and EXPLAIN ANALYZEs both. Each figure is the median (and least) of
LIST_FILTER_REPEATS runs (default 5) of wall time, the client thread's CPU time and the PostgreSQL
backend's CPU time (/proc/<pid>/schedstat, so Linux only): the derivations use CPU time, which a shared
machine stretches far less than wall time. It also times, without the database, the Python steps
CKAN takes per list item. Writes list-filter-timings.json beside itself (or to the path given).
"""
import copy
import datetime
import io
import json
import os
import platform
import statistics
import sys
import time

import psycopg2

try:
    import sqlparse
except ImportError:
    sqlparse = None
try:
    import sqlalchemy as sa
except ImportError:
    sa = None

DSN = os.environ.get("LIST_FILTER_DSN", "dbname=ckan_list_filter")
REPEATS = int(os.environ.get("LIST_FILTER_REPEATS", "5"))
TABLES = {
    200_000: ("5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2", [0, 100_000, 168_000]),
    1_000_000: ("7c0e3f1a-9a3b-4d2e-8f61-0b1d2c3e4f50", [0, 100_000, 168_000, 900_000]),
}
PAGES = [32_000, 10_000]

# CKAN's `set-permissions` trigger: `_full_text` is every non-underscore column's text, so the row
# is as wide on disk as in a real DataStore.
SETUP_SQL = r"""
DO $$ BEGIN
  CREATE TYPE nested AS (json json, extra text);
EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE OR REPLACE FUNCTION populate_full_text_trigger() RETURNS trigger AS $body$
BEGIN
  IF NEW._full_text IS NOT NULL THEN RETURN NEW; END IF;
  NEW._full_text := (
    SELECT to_tsvector(string_agg(value, ' '))
    FROM json_each_text(row_to_json(NEW.*)::json)
    WHERE key NOT LIKE '\_%');
  RETURN NEW;
END;
$body$ LANGUAGE plpgsql;
"""

# The real timings' table (see the shared ckan-2.12-responses README): id int4, amount numeric,
# ratio float8, category/name/note/formula text, created timestamp, day date, active bool,
# tags text[], meta json (which CKAN stores as its `nested` composite).
CREATE_SQL = """
CREATE TABLE "{t}" ("_id" serial primary key, "_full_text" tsvector, "id" int4, "amount" numeric,
  "ratio" float8, "category" text, "name" text, "note" text, "formula" text, "created" timestamp,
  "day" date, "active" bool, "tags" text[], "meta" nested);
CREATE TRIGGER zfulltext BEFORE INSERT OR UPDATE ON "{t}"
  FOR EACH ROW EXECUTE PROCEDURE populate_full_text_trigger();
"""

INSERT_SQL = r"""
INSERT INTO "{t}" ("id", "amount", "ratio", "category", "name", "note", "formula", "created", "day",
  "active", "tags", "meta")
SELECT n,
  CASE n %% 4 WHEN 0 THEN round((((n::bigint * 7919) %% 2000000) - 1000000) / 100.0, 2)
             WHEN 1 THEN ((n::bigint * 31) %% 100000)::numeric
             WHEN 2 THEN round(((n::bigint * 13) %% 1000000) / 1000.0, 3) ELSE 0 END,
  sin(n) * power(10.0, (n %% 21) - 5),
  (ARRAY['alpha','beta','gamma','delta','epsilon'])[n %% 5 + 1],
  CASE n %% 3 WHEN 0 THEN w || ', ' || w || ' and ' || w
             WHEN 1 THEN 'He said "' || w || '" twice ""' ELSE w || ' ' || n END,
  CASE WHEN n %% 7 = 0 THEN NULL ELSE 'note ' || n || ' ' || w END,
  (ARRAY['+desert','-403','=SUM(A1)','1e5','+3','-',' =spaced'])[n %% 7 + 1],
  timestamp '2020-01-01' + n * interval '977 seconds',
  date '2000-01-01' + (n %% 20000),
  CASE n %% 3 WHEN 0 THEN NULL WHEN 1 THEN true ELSE false END,
  CASE n %% 4 WHEN 0 THEN ARRAY['alpha','beta'] WHEN 1 THEN ARRAY['a,b','say "hi"']
             WHEN 2 THEN NULL ELSE '{{}}'::text[] END,
  ROW(('{{"k": ' || (n %% 10) || ', "w": "' || w || '", "f": 1.0, "u": "\u00d1and\u00fa", '
       || '"nested": {{"a": [1, "x", null, true]}}, "big": 12345678901234567890}}')::json, '')::nested
FROM (SELECT n, (ARRAY['glacier','river','canyon','summit','desert','forest','meadow','delta'])[n %% 8 + 1] AS w
      FROM generate_series(%s, %s) AS n) AS g
"""

# datastore_search's select list for records_format csv (DatastorePostgresqlBackend.datastore_search):
# timestamps through to_char, arrays through array_to_json, json (`nested`) through its .json member.
SELECT = ", ".join([
    '"_id"', '"id"', '"amount"', '"ratio"', '"category"', '"name"', '"note"', '"formula"',
    """to_char("created", 'YYYY-MM-DD"T"HH24:MI:SS')""", '"day"', '"active"',
    """coalesce(array_to_json("tags"),'null')""", """coalesce(("meta").json,'null')""",
])


def sql_210(table, where, limit, offset):
    """2.10 search_data, records_format csv: the page in a subquery, then the select list."""
    return f"""
            COPY (
                SELECT  {SELECT}
                FROM (
                    SELECT * FROM "{table}" 
                    {where} ORDER BY "_id" asc LIMIT {limit} OFFSET {offset}
                ) as z
            ) TO STDOUT csv DELIMITER ',' """


def sql_211(table, where, limit, offset):
    """2.11 search_data, records_format csv: one flat SELECT (the select list runs on skipped rows too)."""
    return f"""
            COPY (
                SELECT  {SELECT}
                FROM "{table}" 
                {where} ORDER BY "_id" asc LIMIT {limit} OFFSET {offset}
            ) TO STDOUT csv DELIMITER ',' """


def where_210(ids):
    """2.10 _where_clauses + _where: `"_id" in (%s,...)` and the values, for psycopg2 to fill in."""
    if not ids:
        return "", []
    clause = '"_id" in ({0})'.format(",".join(["%s"] * len(ids)))
    return "WHERE (" + clause + ")", list(ids)


def where_211(ids):
    """2.11 _where_clauses + _where: `_id in (:value_0,...)` and a dict of named values."""
    if not ids:
        return "", {}
    names = [f"value_{i}" for i in range(len(ids))]
    clause = "_id in ({0})".format(",".join(f":{p}" for p in names))
    return "WHERE (" + clause + ")", dict(zip(names, ids))


def bind_210(cur, sql, values):
    return cur.mogrify(sql, values).decode() if values else sql


def bind_211(sql, params):
    if not params:
        return sql
    return str(sa.text(sql).bindparams(**params).compile(compile_kwargs={"literal_binds": True}))


def backend_cpu_ns(pid):
    """CPU time the PostgreSQL backend has run, ns (Linux schedstat): its work, whatever else runs."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def measure(fn, backend=None, repeats=REPEATS):
    """Median of `repeats` runs after one warm-up: wall ms, this thread's CPU ms and, given the
    backend's pid, the backend's CPU ms. CPU times are what the derivations use: the machine is
    shared, and a busy machine stretches wall time but not the CPU a step takes."""
    fn()  # warm: the page's heap and index blocks in cache
    wall, client, server = [], [], []
    for _ in range(repeats):
        s0 = backend_cpu_ns(backend) if backend else 0
        c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
        fn()
        t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        s1 = backend_cpu_ns(backend) if backend else 0
        wall.append((t1 - t0) / 1e6)
        client.append((c1 - c0) / 1e6)
        server.append((s1 - s0) / 1e6)
    out = {"wall_ms": round(statistics.median(wall), 3), "client_cpu_ms": round(statistics.median(client), 3),
           "client_cpu_min_ms": round(min(client), 3)}
    if backend:
        out["backend_cpu_ms"] = round(statistics.median(server), 3)
        out["backend_cpu_min_ms"] = round(min(server), 3)
        out["backend_cpu_runs_ms"] = [round(v, 3) for v in server]
    out["wall_runs_ms"] = [round(v, 3) for v in wall]
    return out


def median_ms(fn, repeats=REPEATS):
    """This thread's CPU, ms (Python-only steps): median and least of the runs."""
    m = measure(fn, repeats=repeats)
    return {"cpu_ms": m["client_cpu_ms"], "cpu_min_ms": m["client_cpu_min_ms"]}


def ensure_table(conn, rows, table):
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)", (f'"{table}"',))
        if cur.fetchone()[0] is not None:
            cur.execute(f'SELECT count(*) FROM "{table}"')
            if cur.fetchone()[0] == rows:
                return False
            cur.execute(f'DROP TABLE "{table}"')
        cur.execute(SETUP_SQL)
        cur.execute(CREATE_SQL.format(t=table))
        for lo in range(1, rows + 1, 100_000):
            cur.execute(INSERT_SQL.format(t=table), (lo, min(rows, lo + 99_999)))
        # CKAN indexes `_full_text` (gist by default); its per-text-column indexes matter to no read here.
        cur.execute(f'CREATE INDEX ON "{table}" USING gist ("_full_text")')
    conn.commit()
    old = conn.isolation_level
    conn.set_isolation_level(0)
    with conn.cursor() as cur:
        cur.execute(f'VACUUM ANALYZE "{table}"')
    conn.set_isolation_level(old)
    return True


def copy_page(conn, sql):
    """What CKAN does with the csv SQL: copy_expert into a StringIO, then getvalue()."""
    buf = io.StringIO()
    with conn.cursor() as cur:
        cur.copy_expert(sql, buf)
    conn.rollback()
    return buf.getvalue()


def explain(conn, sql):
    inner = sql.strip()[len("COPY ("):].rsplit(")", 1)[0]
    with conn.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + inner)
        lines = [r[0] for r in cur.fetchall()]
    conn.rollback()
    return lines


def plan_only_ms(conn, sql, backend):
    """Backend CPU of a plain EXPLAIN: parsing, analysing and planning the statement, no execution."""
    inner = sql.strip()[len("COPY ("):].rsplit(")", 1)[0]

    def run():
        with conn.cursor() as cur:
            cur.execute("EXPLAIN " + inner)
            cur.fetchall()
        conn.rollback()

    return measure(run, backend)["backend_cpu_ms"]


def python_share(n):
    """CKAN's Python work that grows with the list, per step, ms (no database): the request's JSON,
    validate()'s deepcopy of data_dict, the where clause, sqlparse's single-statement check on the
    SQL before its values are in, the binding of the values, and the answer's JSON (it echoes filters)."""
    ids = list(range(100_001, 100_001 + n))
    body = json.dumps({"resource_id": "r", "filters": {"_id": ids}, "sort": "_id", "limit": n,
                       "records_format": "csv", "include_total": False})
    data_dict = json.loads(body)
    out = {}
    out["json_request_ms"] = median_ms(lambda: json.loads(body))
    out["deepcopy_ms"] = median_ms(lambda: copy.deepcopy(data_dict))
    out["json_answer_ms"] = median_ms(lambda: json.dumps({"help": "h", "success": True, "result": data_dict}))
    conn = psycopg2.connect(DSN)
    cur = conn.cursor()
    for version, where, make, bind in (
        ("2.10", where_210, sql_210, lambda sql, v: bind_210(cur, sql, v)),
        ("2.11", where_211, sql_211, bind_211),
    ):
        part = {"where_clause_ms": median_ms(lambda: where(ids))}
        clause, values = where(ids)
        sql = make("t", clause, n, 0)
        if sqlparse is not None:
            part["single_statement_ms"] = median_ms(lambda: sqlparse.split(sql))
            part["single_statement_offset_page_ms"] = median_ms(lambda: sqlparse.split(make("t", "", n, 100_000)))
        if version == "2.10" or sa is not None:
            part["bind_ms"] = median_ms(lambda: bind(sql, values))
        out[version] = part
    conn.close()
    for version in ("2.10", "2.11"):
        steps = ["json_request_ms", "deepcopy_ms", "json_answer_ms"]
        part = out[version]
        for key in ("cpu_ms", "cpu_min_ms"):
            total = sum(out[s][key] for s in steps) + part["where_clause_ms"][key] + part.get("bind_ms", {}).get(key, 0)
            if "single_statement_ms" in part:
                total += part["single_statement_ms"][key] - part["single_statement_offset_page_ms"][key]
            part["us_per_id_" + key.replace("_ms", "")] = round(total * 1000 / n, 3)
    return out


def measure_table(conn, rows, table, offsets, results):
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    backend = cur.fetchone()[0]
    conn.rollback()
    for n in PAGES:
        for k in offsets:
            if k + n > rows:
                continue
            ids = list(range(k + 1, k + n + 1))
            for version, make, where, bind in (
                ("2.10", sql_210, where_210, lambda s, v: bind_210(cur, s, v)),
                ("2.11", sql_211, where_211, bind_211),
            ):
                if version == "2.11" and sa is None:
                    continue
                by_offset = make(table, "", n, k)
                clause, values = where(ids)
                by_list = bind(make(table, clause, n, 0), values)
                a, b = copy_page(conn, by_offset), copy_page(conn, by_list)
                assert a == b, f"{version} n={n} k={k}: the list page is not the offset page"
                for kind, sql in (("offset", by_offset), ("list", by_list)):
                    m = measure(lambda: copy_page(conn, sql), backend)
                    results.append({
                        "rows_in_table": rows, "ckan": version, "asked_by": kind, "limit": n,
                        "first_id": k + 1, "offset": k if kind == "offset" else 0,
                        "sql_chars": len(sql), "csv_bytes": len(a.encode()), **m,
                        "plan_only_backend_cpu_ms": plan_only_ms(conn, sql, backend),
                        "plan": [line[:160] for line in explain(conn, sql)],
                    })
                    print(f"{rows} {version} {kind:6} n={n} k={k}: backend {m['backend_cpu_ms']} ms CPU, "
                          f"client {m['client_cpu_ms']} ms CPU, wall {m['wall_ms']} ms", flush=True)
    cur.close()


def fit_line(xs, ys):
    """Least squares y = a + b·x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def derive(results, key="backend_cpu_ms"):
    """Skip µs per offset row (fit over offsets), list µs per id above the same rows at offset 0."""
    out = []
    for rows in sorted({r["rows_in_table"] for r in results}):
        for version in ("2.10", "2.11"):
            for n in PAGES:
                pick = [r for r in results if (r["rows_in_table"], r["ckan"], r["limit"]) == (rows, version, n)]
                offs = sorted((r["offset"], r[key]) for r in pick if r["asked_by"] == "offset")
                lists = sorted((r["first_id"] - 1, r[key]) for r in pick if r["asked_by"] == "list")
                if len(offs) < 2 or not lists:
                    continue
                _, skip = fit_line([k for k, _ in offs], [ms for _, ms in offs])
                at0 = dict(offs)[0]
                per_id = statistics.fmean((ms - at0) * 1000 / n for _, ms in lists)
                out.append({
                    "rows_in_table": rows, "ckan": version, "limit": n, "measure": key,
                    "offset_ms": {str(k): ms for k, ms in offs},
                    "list_ms": {str(k): ms for k, ms in lists},
                    "skip_us_per_row": round(skip * 1000, 4),
                    "list_us_per_id_above_offset0": round(per_id, 4),
                    "ratio_list_id_to_skip_row": round(per_id / (skip * 1000), 2),
                })
    return out


def main():
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "list-filter-timings.json")
    conn = psycopg2.connect(DSN)
    with conn.cursor() as cur:
        cur.execute("SELECT version()")
        pg_version = cur.fetchone()[0]
        cur.execute("SELECT name, setting FROM pg_settings WHERE name IN "
                    "('shared_buffers','work_mem','jit','effective_cache_size','random_page_cost')")
        settings = dict(cur.fetchall())
    conn.rollback()
    results = []
    for rows, (table, offsets) in TABLES.items():
        t0 = time.perf_counter()
        if ensure_table(conn, rows, table):
            print(f"built {rows} rows in {time.perf_counter() - t0:.0f} s", flush=True)
        measure_table(conn, rows, table, offsets, results)
    conn.close()
    doc = {
        "what": "CKAN 2.10/2.11 datastore_search csv pages by OFFSET and by _id IN (list): the SQL as CKAN "
                "sends it, on a local PostgreSQL, one at a time, warm; each timing the median (and least) of "
                "`repeats` runs of wall time, client thread CPU and PostgreSQL backend CPU, ms. derived: skip "
                "per offset row and per-id cost above the offset-0 page, from backend CPU medians (derived_min: "
                "least values). python_share: CKAN's Python steps per list, thread CPU, ms. Not a whole CKAN: "
                "no gunicorn, HTTP or action layer around it.",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "postgresql": pg_version,
        "postgresql_settings": settings,
        "python": platform.python_version(),
        "psycopg2": psycopg2.__version__,
        "sqlparse": getattr(sqlparse, "__version__", None),
        "sqlalchemy": getattr(sa, "__version__", None),
        "cores": os.cpu_count(),
        "loadavg_at_end": os.getloadavg(),
        "repeats": REPEATS,
        "python_share": {str(n): python_share(n) for n in PAGES},
        "derived": derive(results),
        "derived_min": derive(results, "backend_cpu_min_ms"),
        "derived_client_cpu": derive(results, "client_cpu_ms"),
        "derived_wall": derive(results, "wall_ms"),
        "timings": results,
    }
    with open(target, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(json.dumps(doc["derived"], indent=1))
    print(json.dumps(doc["python_share"], indent=1))


if __name__ == "__main__":
    main()
