-- tfm's background job workers without shared_preload_libraries (the
-- pg_regress server does not preload tfm): no launcher, no workers, jobs
-- run only by CALL tfm_job_run (test/regress/sql/jobs.sql); the settings exist with
-- their defaults, tfm.job_workers as a reload setting that does nothing
-- (PostgreSQL allows a library's restart-only settings only while
-- preloading).  test/cluster/test_job_workers.sh runs the workers themselves.
SELECT count(*) AS workers FROM tfm.job_workers;
SELECT count(*) AS slots FROM tfm.job_workers_list();
SELECT count(*) AS launchers FROM pg_stat_activity WHERE backend_type LIKE 'tfm job%';
SELECT name, setting, unit, context, min_val, max_val FROM pg_settings
 WHERE name IN ('tfm.job_workers', 'tfm.job_naptime') ORDER BY name;
SET tfm.job_workers = 1;
SET tfm.job_naptime = '2s';
-- the view's columns
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'tfm.job_workers'::regclass AND attnum > 0 ORDER BY attnum;
