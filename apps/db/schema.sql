-- perflab schema: the tables of the four workloads and of TechEmpower's database tests (their endpoints:
-- apps/contract/README.md).
-- Used as-is by the lab's mysql role and by the apps' contract harness.
-- Idempotent: safe to apply to an existing database.

-- Report 1: get-or-create of zip codes.
CREATE TABLE IF NOT EXISTS zipcode (
  zip      VARCHAR(10) NOT NULL,
  city     VARCHAR(64) NOT NULL,
  county   VARCHAR(64) NOT NULL,
  state    CHAR(2)     NOT NULL,
  timezone VARCHAR(32) NOT NULL,
  type     VARCHAR(16) NOT NULL,
  PRIMARY KEY (zip),
  KEY idx_zipcode_city (city)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Report 4: books, users and the orders linking them.
CREATE TABLE IF NOT EXISTS book (
  id     BIGINT       NOT NULL AUTO_INCREMENT,
  title  VARCHAR(128) NOT NULL,
  author VARCHAR(128) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS app_user (
  id   BIGINT      NOT NULL AUTO_INCREMENT,
  name VARCHAR(64) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS book_order (
  id      BIGINT NOT NULL AUTO_INCREMENT,
  book_id BIGINT NOT NULL,
  user_id BIGINT NOT NULL,
  PRIMARY KEY (id),
  CONSTRAINT fk_order_book FOREIGN KEY (book_id) REFERENCES book (id),
  CONSTRAINT fk_order_user FOREIGN KEY (user_id) REFERENCES app_user (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- TechEmpower's database tests (/db, /queries, /updates, /fortunes): their World and Fortune tables, named
-- in lower case without quotes as their create-postgres.sql creates them, so that one SQL text reads both
-- engines (MariaDB compares unquoted table names case-sensitively on Linux).
CREATE TABLE IF NOT EXISTS world (
  id           INT NOT NULL,
  randomnumber INT NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS fortune (
  id      INT           NOT NULL,
  message VARCHAR(2048) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
