-- perflab seed on PostgreSQL: the rows of apps/db/seed.sql (read its keys there), written with
-- generate_series. Restores the seed state: truncates every table, refills them and restarts the
-- ids where the MariaDB seed restarts its AUTO_INCREMENTs (book 101, app_user 1001, book_order 1).
-- One transaction: a reset either happens whole or not at all.
BEGIN;
TRUNCATE TABLE book_order, book, app_user, zipcode RESTART IDENTITY;

INSERT INTO zipcode (zip, city, county, state, timezone, type)
SELECT (10000 + i)::text,
       'City-' || lpad((i % 2000)::text, 4, '0'),
       'County-' || lpad((i % 300)::text, 3, '0'),
       (ARRAY['AL', 'CA', 'FL', 'GA', 'IL', 'MA', 'NY', 'OH', 'TX', 'WA'])[1 + i % 10],
       (ARRAY['America/New_York', 'America/Chicago', 'America/Denver', 'America/Los_Angeles'])[1 + i % 4],
       (ARRAY['STANDARD', 'PO BOX', 'UNIQUE'])[1 + i % 3]
FROM generate_series(0, 39999) AS i;

INSERT INTO book (id, title, author)
SELECT i, 'Book ' || lpad(i::text, 3, '0'), 'Author ' || lpad((i % 37)::text, 2, '0')
FROM generate_series(1, 100) AS i;

INSERT INTO app_user (id, name)
SELECT i, 'user-' || lpad(i::text, 4, '0')
FROM generate_series(1, 1000) AS i;

-- Rows inserted with explicit ids leave an identity's sequence where it was: the next book is 101.
SELECT setval(pg_get_serial_sequence('book', 'id'), 100);
SELECT setval(pg_get_serial_sequence('app_user', 'id'), 1000);
COMMIT;

-- The planner's statistics of the fresh rows, before the first request plans against them.
ANALYZE zipcode, book, app_user, book_order;
