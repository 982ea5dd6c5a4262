// The chart's `helm test`: run by `node --input-type=module -e` in alert-receiver's image (the
// Pod of templates/tests/release-test.yaml, which chart-templates.ts generates with this text).
// Checks that each function answers its readiness endpoint (READINESS_URLS: {name: url}, 200 within
// 30 s; a function scaled to zero has no endpoint to answer), and, when PROMETHEUS_URL is set,
// that the Prometheus there has loaded every alert on appmonitor (SELF_ALERTS: names, from its
// /api/v1/rules). Prints one line per check, `ok` or `FAIL` with why; exits 1 on any failure.
// Plain JavaScript, no imports: the image holds the function's bundle alone.
/* global process, fetch, console, AbortSignal */
const urls = JSON.parse(process.env.READINESS_URLS ?? "{}");
const alerts = JSON.parse(process.env.SELF_ALERTS ?? "[]");
const prometheus = (process.env.PROMETHEUS_URL ?? "").replace(/\/+$/, "");
const failures = [];

/** GET url (30 s at most): the response, or the error's code/message as a string. */
async function get(url) {
  try {
    return await fetch(url, { signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    return `${error.cause?.code ?? error.name}: ${error.cause?.message ?? error.message}`;
  }
}

for (const [name, url] of Object.entries(urls)) {
  const response = await get(url);
  if (typeof response === "string") failures.push(`${name}: ${url} did not answer (${response})`);
  else if (response.status !== 200) failures.push(`${name}: ${url} answered ${response.status}`);
  else console.log(`ok ${name}: ${url} answered 200`);
}

if (prometheus === "") {
  console.log("skipped the self-alerts: no prometheusUrl, or monitoring.selfAlerts off");
} else {
  const url = `${prometheus}/api/v1/rules?type=alert`;
  const response = await get(url);
  if (typeof response === "string" || response.status !== 200) {
    failures.push(`Prometheus: ${url} ${typeof response === "string" ? `did not answer (${response})` : `answered ${response.status}`}`);
  } else {
    const body = await response.json();
    const loaded = new Set((body.data?.groups ?? []).flatMap((g) => (g.rules ?? []).map((r) => r.name)));
    const missing = alerts.filter((a) => !loaded.has(a));
    if (missing.length > 0) failures.push(`Prometheus at ${prometheus} has not loaded the self-alerts ${missing.join(", ")} (the PrometheusRule appmonitor-alerts, where its ruleSelector finds it)`);
    else console.log(`ok Prometheus at ${prometheus} has loaded the ${alerts.length} self-alerts`);
  }
}

for (const failure of failures) console.log(`FAIL ${failure}`);
process.exit(failures.length > 0 ? 1 : 0);
