// Test helper (not part of slipway): validate Kubernetes objects against the API's schemas with
// the npm package kubernetes-models (scripts/k8s-schemas.sh installs it; NODE_PATH points there).
// Reads a JSON array of objects on stdin; prints one line per object; exit 0 when every object
// validates, 1 when one does not (its errors printed), 2 on unusable input.
'use strict';
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
