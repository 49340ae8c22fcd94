// Zip codes, report 1 done right: a read/write mix that stays constant through the run.
// Each request draws read or write deterministically against WRITE_RATIO (0..1).
// Reads GET a seeded zip (10000..49999); writes POST a fresh ZIP+4 key that never repeats:
// it interleaves the VU id with the VU's write counter, under a prefix per KEY_PHASE.
import http from 'k6/http';
import { BASE_URL, KEY_PHASE, VU_SLOTS, draw, options as perflabOptions, position, record, summary } from './lib/perflab.js';

const WRITE_RATIO = parseFloat(__ENV.WRITE_RATIO || '0.5');
const SEEDED_FIRST = 10000;
const SEEDED_COUNT = 40000;
const STATES = ['AL', 'CA', 'FL', 'GA', 'IL', 'MA', 'NY', 'OH', 'TX', 'WA'];
const PARAMS = { headers: { 'Content-Type': 'application/json' } };

export const options = perflabOptions('zipcodes', ['read', 'write']);

let writes = 0;

function freshZip(vu) {
  const key = KEY_PHASE * 1e8 + writes * VU_SLOTS + vu;
  writes += 1;
  const digits = String(key).padStart(9, '0');
  return `${digits.slice(0, 5)}-${digits.slice(5)}`;
}

export default function () {
  const { n, vu } = position();
  if (draw(n, vu) < WRITE_RATIO) {
    const zip = freshZip(vu);
    const body = JSON.stringify({
      zip,
      city: `City-${String(n % 2000).padStart(4, '0')}`,
      county: `County-${String(n % 300).padStart(3, '0')}`,
      state: STATES[n % STATES.length],
      timezone: 'America/New_York',
      type: 'STANDARD',
    });
    const res = http.post(`${BASE_URL}/zipcodes`, body, Object.assign({ tags: { name: 'POST /zipcodes', op: 'write' } }, PARAMS));
    // 201 only: a fresh key that already existed (200) would mean the mix is drifting.
    record(res, 'write', [201]);
  } else {
    const zip = SEEDED_FIRST + ((n * 7919 + vu * 104729) % SEEDED_COUNT);
    const res = http.get(`${BASE_URL}/zipcodes/${zip}`, { tags: { name: 'GET /zipcodes/{zip}', op: 'read' } });
    record(res, 'read', [200]);
  }
}

export function handleSummary(data) {
  return summary(data);
}
