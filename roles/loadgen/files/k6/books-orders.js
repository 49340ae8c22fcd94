// Report 4: GET /books (a list that grows), POST /books, POST /orders linking a seeded book
// (1..100) and a seeded user (1..1000). The operation of each request is a deterministic draw
// against the weights GET_BOOKS_WEIGHT, POST_BOOKS_WEIGHT, POST_ORDERS_WEIGHT.
import http from 'k6/http';
import { BASE_URL, draw, options as perflabOptions, position, record, summary } from './lib/perflab.js';

const WEIGHTS = [
  parseFloat(__ENV.GET_BOOKS_WEIGHT || '1'),
  parseFloat(__ENV.POST_BOOKS_WEIGHT || '1'),
  parseFloat(__ENV.POST_ORDERS_WEIGHT || '1'),
];
const TOTAL = WEIGHTS[0] + WEIGHTS[1] + WEIGHTS[2];
const PARAMS = { headers: { 'Content-Type': 'application/json' } };

export const options = perflabOptions('books-orders', ['get_books', 'post_books', 'post_orders']);

export default function () {
  const { n, vu } = position();
  const u = draw(n, vu) * TOTAL;
  if (u < WEIGHTS[0]) {
    const res = http.get(`${BASE_URL}/books`, { tags: { name: 'GET /books', op: 'get_books' } });
    record(res, 'get_books', [200]);
  } else if (u < WEIGHTS[0] + WEIGHTS[1]) {
    const body = JSON.stringify({ title: `Load ${vu}-${n}`, author: `Author ${vu % 37}` });
    const res = http.post(`${BASE_URL}/books`, body, Object.assign({ tags: { name: 'POST /books', op: 'post_books' } }, PARAMS));
    record(res, 'post_books', [201]);
  } else {
    const body = JSON.stringify({ bookId: 1 + ((n * 31 + vu) % 100), userId: 1 + ((n * 7 + vu * 13) % 1000) });
    const res = http.post(`${BASE_URL}/orders`, body, Object.assign({ tags: { name: 'POST /orders', op: 'post_orders' } }, PARAMS));
    record(res, 'post_orders', [201]);
  }
}

export function handleSummary(data) {
  return summary(data);
}
