// Test helper (not part of slipway): validate Kubernetes objects against the API's schemas with
// the npm package kubernetes-models (scripts/k8s-schemas.sh installs it; NODE_PATH points there).
// Reads a JSON array of objects on stdin; prints one line per object; exit 0 when every object
// validates, 1 when one does not (its errors printed), 2 on unusable input.
'use strict';

// LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) is a CRD: no npm package carries its schema
// (`npm view @kubernetes-models/lws`, `@kubernetes-models/leaderworkerset`: 404), so its check is
// written here from the CRD's facts (kubernetes-sigs/lws api/leaderworkerset/v1): spec.replicas
// int >= 0; spec.startupPolicy LeaderCreated | LeaderReady; spec.leaderWorkerTemplate required,
// with workerTemplate (a PodTemplateSpec) required, leaderTemplate (a PodTemplateSpec) optional,
// size int >= 1, restartPolicy RecreateGroupOnPodRestart | RecreateGroupAfterStart | None |
// Default, subGroupPolicy {subGroupSize int >= 1}; spec.rolloutStrategy {type RollingUpdate,
// rollingUpdateConfiguration}; spec.networkConfig {subdomainPolicy Shared | UniquePerReplica}.
// Unknown fields are errors (what a strict server-side field validation does). Each pod template
// is validated by kubernetes-models' own core/v1 PodTemplate.
function lwsErrors(o) {
  const errs = [];
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const isInt = (v, min) => Number.isInteger(v) && v >= min;
  const only = (v, keys, where) => {
    for (const k of Object.keys(v)) if (!keys.includes(k)) errs.push(`${where}.${k}: unknown field`);
  };
  only(o, ['apiVersion', 'kind', 'metadata', 'spec', 'status'], '');
  if (!isObj(o.metadata) || !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(String(o.metadata.name)))
    errs.push('.metadata.name: a DNS-1123 label is required');
  const spec = o.spec;
  if (!isObj(spec)) return errs.concat(['.spec: required object']);
  only(spec, ['replicas', 'leaderWorkerTemplate', 'rolloutStrategy', 'startupPolicy', 'networkConfig'],
       '.spec');
  if (spec.replicas !== undefined && !isInt(spec.replicas, 0)) errs.push('.spec.replicas: int >= 0');
  if (spec.startupPolicy !== undefined && !['LeaderCreated', 'LeaderReady'].includes(spec.startupPolicy))
    errs.push('.spec.startupPolicy: LeaderCreated or LeaderReady');
  if (spec.networkConfig !== undefined &&
      (!isObj(spec.networkConfig) ||
       !['Shared', 'UniquePerReplica'].includes(spec.networkConfig.subdomainPolicy)))
    errs.push('.spec.networkConfig.subdomainPolicy: Shared or UniquePerReplica');
  if (spec.rolloutStrategy !== undefined &&
      (!isObj(spec.rolloutStrategy) || spec.rolloutStrategy.type !== 'RollingUpdate'))
    errs.push('.spec.rolloutStrategy.type: RollingUpdate');
  const t = spec.leaderWorkerTemplate;
  if (!isObj(t)) return errs.concat(['.spec.leaderWorkerTemplate: required object']);
  only(t, ['leaderTemplate', 'workerTemplate', 'size', 'restartPolicy', 'subGroupPolicy'],
       '.spec.leaderWorkerTemplate');
  if (t.size !== undefined && !isInt(t.size, 1)) errs.push('.spec.leaderWorkerTemplate.size: int >= 1');
  if (t.restartPolicy !== undefined &&
      !['RecreateGroupOnPodRestart', 'RecreateGroupAfterStart', 'None', 'Default'].includes(t.restartPolicy))
    errs.push('.spec.leaderWorkerTemplate.restartPolicy: not an allowed value');
  if (t.subGroupPolicy !== undefined &&
      (!isObj(t.subGroupPolicy) || !isInt(t.subGroupPolicy.subGroupSize, 1)))
    errs.push('.spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: int >= 1');
  if (!isObj(t.workerTemplate)) errs.push('.spec.leaderWorkerTemplate.workerTemplate: required');
  const { PodTemplate } = require('kubernetes-models/v1/PodTemplate');
  for (const k of ['leaderTemplate', 'workerTemplate']) {
    if (!isObj(t[k])) continue;
    try {
      new PodTemplate({ metadata: { name: 'x' }, template: t[k] }).validate();
    } catch (err) {
      errs.push(`.spec.leaderWorkerTemplate.${k}: ${err.message}`);
    }
  }
  return errs;
}
let text = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => (text += c));
process.stdin.on('end', () => {
  let objs;
  try {
    objs = JSON.parse(text);
  } catch (err) {
    console.error('k8s-validate: stdin is not JSON: ' + err.message);
    process.exit(2);
  }
  if (!Array.isArray(objs) || objs.length === 0) {
    console.error('k8s-validate: want a non-empty JSON array of objects');
    process.exit(2);
  }
  let bad = 0;
  for (const o of objs) {
    const api = String(o.apiVersion || '');
    const kind = String(o.kind || '');
    if (api === 'leaderworkerset.x-k8s.io/v1' && kind === 'LeaderWorkerSet') {
      const errs = lwsErrors(o);
      if (errs.length) {
        console.log(`INVALID ${api} ${kind} ${o.metadata && o.metadata.name}: ${errs.join('; ')}`);
        bad++;
      } else {
        console.log(`valid ${api} ${kind} ${o.metadata && o.metadata.name} (CRD facts)`);
      }
      continue;
    }
    let Model;
    try {
      Model = require('kubernetes-models/' + api + '/' + kind)[kind];
    } catch (err) {
      console.log(`unknown ${api} ${kind}: ${err.message}`);
      bad++;
      continue;
    }
    try {
      new Model(o).validate();
      console.log(`valid ${api} ${kind} ${o.metadata && o.metadata.name}`);
    } catch (err) {
      console.log(`INVALID ${api} ${kind} ${o.metadata && o.metadata.name}: ${err.message}`);
      bad++;
    }
  }
  process.exit(bad ? 1 : 0);
});
