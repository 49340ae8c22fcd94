// Report 3: GET /greeting/{name} with Bean Validation, served on Quarkus' IO or worker thread.
import http from 'k6/http';
import { BASE_URL, options as perflabOptions, record, summary } from './lib/perflab.js';

const NAME = encodeURIComponent(__ENV.GREETING_NAME || 'perflab');
const URL = `${BASE_URL}/greeting/${NAME}`;

export const options = perflabOptions('greeting', ['greeting']);

export default function () {
  const res = http.get(URL, { tags: { name: 'GET /greeting/{name}', op: 'greeting' } });
  record(res, 'greeting', [200]);
}

export function handleSummary(data) {
  return summary(data);
}
