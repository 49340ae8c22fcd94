-- perflab seed on PostgreSQL: the rows of apps/db/seed.sql (read its keys there), written with
-- generate_series. Restores the seed state: truncates every table, refills them and restarts the
-- ids where the MariaDB seed restarts its AUTO_INCREMENTs (book 101, app_user 1001, book_order 1).
-- World's and Fortune's rows too (TechEmpower's tables: apps/db/seed.sql says how). One transaction: a reset
-- either happens whole or not at all. The messages are UTF-8 whatever the client's locale says.
SET client_encoding = 'UTF8';
BEGIN;
TRUNCATE TABLE book_order, book, app_user, zipcode, world, fortune RESTART IDENTITY;

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

INSERT INTO world (id, randomnumber)
SELECT i, 1 + (i * 7919) % 10000
FROM generate_series(1, 10000) AS i;

INSERT INTO fortune (id, message) VALUES
  (1, 'fortune: No such file or directory'),
  (2, 'A computer scientist is someone who fixes things that aren''t broken.'),
  (3, 'After enough decimal places, nobody gives a damn.'),
  (4, 'A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1'),
  (5, 'A computer program does what you tell it to do, not what you want it to do.'),
  (6, 'Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen'),
  (7, 'Any program that runs right is obsolete.'),
  (8, 'A list is only as strong as its weakest link. — Donald Knuth'),
  (9, 'Feature: A bug with seniority.'),
  (10, 'Computers make very fast, very accurate mistakes.'),
  (11, '<script>alert("This should not be displayed in a browser alert box.");</script>'),
  (12, 'フレームワークのベンチマーク');

-- Rows inserted with explicit ids leave an identity's sequence where it was: the next book is 101.
SELECT setval(pg_get_serial_sequence('book', 'id'), 100);
SELECT setval(pg_get_serial_sequence('app_user', 'id'), 1000);
COMMIT;

-- The planner's statistics of the fresh rows, before the first request plans against them.
ANALYZE zipcode, book, app_user, book_order, world, fortune;
