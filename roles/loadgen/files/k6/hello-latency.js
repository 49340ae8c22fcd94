// Report 2: GET /hello/{latency}, a server-side delay of LATENCY_MS (blocking in MVC,
// non-blocking in WebFlux and Quarkus). A blocking server tops out near threads / latency.
import http from 'k6/http';
import { BASE_URL, options as perflabOptions, record, summary } from './lib/perflab.js';

const LATENCY_MS = parseInt(__ENV.LATENCY_MS || '100', 10);
const URL = `${BASE_URL}/hello/${LATENCY_MS}`;

export const options = perflabOptions('hello-latency', ['hello']);

export default function () {
  const res = http.get(URL, { tags: { name: 'GET /hello/{latency}', op: 'hello' } });
  record(res, 'hello', [200]);
}

export function handleSummary(data) {
  return summary(data);
}
