// Shared by every perflab k6 workload: the constant-arrival-rate schedule, the deterministic
// per-request draw, error counting by kind and the JSON summary for the perflab parser.
//
// Environment (set by the bench): BASE_URL, RATE (requests/s), DURATION (e.g. 60s),
// PRE_ALLOCATED_VUS, MAX_VUS, SUMMARY_FILE (JSON summary path), KEY_PHASE (0..9: keeps the
// fresh write keys of warm-up and measured phase apart).
import exec from 'k6/execution';
import { Counter, Gauge } from 'k6/metrics';

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const RATE = parseInt(__ENV.RATE || '100', 10);
const DURATION = __ENV.DURATION || '30s';
const PRE_ALLOCATED_VUS = parseInt(__ENV.PRE_ALLOCATED_VUS || '50', 10);
const MAX_VUS = parseInt(__ENV.MAX_VUS || String(PRE_ALLOCATED_VUS), 10);
export const KEY_PHASE = parseInt(__ENV.KEY_PHASE || '0', 10);

// Every request, counted by operation; failures counted by kind (see errorKind).
export const requests = new Counter('perflab_requests');
// The target rate, so that dashboards (k6 remote write) plot achieved against target.
const targetRate = new Gauge('perflab_target_rate');
export const errors = new Counter('perflab_errors');
const ERROR_KINDS = ['timeout', 'connect', 'network', 'http_4xx', 'http_5xx', 'unexpected_status'];

// `workload` names the k6 scenario, so k6's own `scenario` tag says which workload ran.
export function options(workload, operations) {
  // Thresholds that always pass make k6 keep the tagged sub-metrics in the summary.
  const thresholds = { perflab_errors: ['count>=0'] };
  for (const kind of ERROR_KINDS) thresholds[`perflab_errors{kind:${kind}}`] = ['count>=0'];
  for (const op of operations) thresholds[`perflab_requests{op:${op}}`] = ['count>=0'];
  return {
    // One iteration = one request, started on schedule whether or not earlier ones have
    // answered: a constant rate, free of coordinated omission while VUs are available.
    scenarios: {
      [workload]: {
        executor: 'constant-arrival-rate',
        rate: RATE,
        timeUnit: '1s',
        duration: DURATION,
        preAllocatedVUs: PRE_ALLOCATED_VUS,
        maxVUs: MAX_VUS,
      },
    },
    thresholds,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(50)', 'p(75)', 'p(90)', 'p(99)', 'p(99.9)', 'p(99.99)'],
    discardResponseBodies: true,
    noConnectionReuse: false,
  };
}

// The number of VU slots: fresh keys interleave VU ids so that no two VUs ever make the same one.
export const VU_SLOTS = MAX_VUS;

// Deterministic, evenly spread draw in [0, 1) for the n-th request of a VU: the golden-ratio
// (Weyl) sequence, offset per VU. Comparing it with a ratio gives a mix that is the same in
// every stretch of the run, unlike a random draw, and the same from run to run.
const GOLDEN = 0.6180339887498949;
export function draw(n, vu) {
  const x = (n + 1) * GOLDEN + vu * 0.7548776662466927;
  return x - Math.floor(x);
}

// The n-th iteration of this VU (0-based) and the VU's id (0-based).
export function position() {
  return { n: exec.vu.iterationInScenario, vu: exec.vu.idInTest - 1 };
}

export function errorKind(res, expected) {
  if (res.status === 0) {
    if (res.error_code === 1050) return 'timeout';
    if (res.error_code >= 1300 && res.error_code < 1400) return 'connect';
    return 'network';
  }
  if (expected.includes(res.status)) return null;
  if (res.status >= 500) return 'http_5xx';
  if (res.status >= 400) return 'http_4xx';
  return 'unexpected_status';
}

// Counts the request under `op` and, when it failed, its error kind. Every 100th iteration of
// a VU also reports the target rate (often enough for a dashboard, cheap for the generator).
export function record(res, op, expected) {
  if (exec.vu.iterationInScenario % 100 === 0) targetRate.add(RATE);
  requests.add(1, { op });
  const kind = errorKind(res, expected);
  if (kind !== null) errors.add(1, { kind, op });
}

export function summary(data) {
  const out = {};
  out[__ENV.SUMMARY_FILE || 'summary.json'] = JSON.stringify(data, null, 2);
  const reqs = data.metrics.http_reqs ? data.metrics.http_reqs.values : { count: 0, rate: 0 };
  const failed = data.metrics.perflab_errors ? data.metrics.perflab_errors.values.count : 0;
  out.stdout = `perflab k6: ${reqs.count} requests, ${reqs.rate.toFixed(1)}/s (target ${RATE}/s), ${failed} errors\n`;
  return out;
}
