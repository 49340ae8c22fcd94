-- perflab seed: restores the deterministic seed state. Run after schema.sql, before every
-- benchmark run, so that each run starts from the same data (report 4 resets between runs).
-- Works on MariaDB 10.11 and MySQL 8: rows come from a cross join of digits, so neither engine's
-- recursion limit (cte_max_recursion_depth / max_recursive_iterations) nor a sequence engine is needed.
--
-- Seeded keys, which the load scenarios rely on:
--   zipcode: 40,000 rows, zip '10000'..'49999' (5 digits); city 'City-0000'..'City-1999',
--            20 zip codes per city. Writes use fresh ZIP+4 keys ('NNNNN-NNNN'), never seeded.
--   book:    100 rows, id 1..100.     app_user: 1,000 rows, id 1..1000.     book_order: empty.
--   world:   TechEmpower's 10,000 rows, id 1..10000, randomnumber = 1 + (id * 7919) MOD 10000: 1..10000,
--            each once (7919 is prime to 10000), spread as a random draw would be, and the same every reset.
--   fortune: TechEmpower's 12 messages (their create-postgres.sql), id 1..12, the <script> one and the
--            Japanese one included: /fortunes must escape and encode them.
-- The messages are UTF-8 whatever the client's locale says.
SET NAMES utf8mb4;
SET FOREIGN_KEY_CHECKS = 0;
TRUNCATE TABLE book_order;
TRUNCATE TABLE book;
TRUNCATE TABLE app_user;
TRUNCATE TABLE zipcode;
TRUNCATE TABLE world;
TRUNCATE TABLE fortune;
SET FOREIGN_KEY_CHECKS = 1;

INSERT INTO zipcode (zip, city, county, state, timezone, type)
WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
     n (i) AS (SELECT a.v + 10 * b.v + 100 * c.v + 1000 * e.v + 10000 * f.v FROM d a, d b, d c, d e, d f)
SELECT CAST(10000 + i AS CHAR),
       CONCAT('City-', LPAD(i MOD 2000, 4, '0')),
       CONCAT('County-', LPAD(i MOD 300, 3, '0')),
       ELT(1 + (i MOD 10), 'AL', 'CA', 'FL', 'GA', 'IL', 'MA', 'NY', 'OH', 'TX', 'WA'),
       ELT(1 + (i MOD 4), 'America/New_York', 'America/Chicago', 'America/Denver', 'America/Los_Angeles'),
       ELT(1 + (i MOD 3), 'STANDARD', 'PO BOX', 'UNIQUE')
FROM n WHERE i < 40000;

INSERT INTO book (id, title, author)
WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
     n (i) AS (SELECT a.v + 10 * b.v + 100 * c.v + 1000 * e.v + 10000 * f.v FROM d a, d b, d c, d e, d f)
SELECT i, CONCAT('Book ', LPAD(i, 3, '0')), CONCAT('Author ', LPAD(i MOD 37, 2, '0')) FROM n WHERE i BETWEEN 1 AND 100;

INSERT INTO app_user (id, name)
WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
     n (i) AS (SELECT a.v + 10 * b.v + 100 * c.v + 1000 * e.v + 10000 * f.v FROM d a, d b, d c, d e, d f)
SELECT i, CONCAT('user-', LPAD(i, 4, '0')) FROM n WHERE i BETWEEN 1 AND 1000;

INSERT INTO world (id, randomnumber)
WITH d (v) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9),
     n (i) AS (SELECT 1 + a.v + 10 * b.v + 100 * c.v + 1000 * e.v FROM d a, d b, d c, d e)
SELECT i, 1 + (i * 7919) MOD 10000 FROM n;

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

ALTER TABLE book AUTO_INCREMENT = 101;
ALTER TABLE app_user AUTO_INCREMENT = 1001;
ALTER TABLE book_order AUTO_INCREMENT = 1;
