// Fidelity tests: the tpufleet emulator driven by Google's own Cloud TPU clients.
//
// Started by run.sh, which gives the emulator's address in TPUFLEET_EMULATOR_ENDPOINT
// ("127.0.0.1:PORT"), a service-account key the emulator accepts in
// TPUFLEET_FIDELITY_SA_KEY, and the file holding the emulator's own secret (what
// `tpufleet emulator start` writes to STATE/token) in TPUFLEET_EMULATOR_TOKEN_FILE. The
// emulator answers only calls carrying that secret or a token its token endpoint issued:
// the main clients here authenticate the way they would against Google (shared/
// reference/tpu-api.md §7, §10), others with the secret as `emulator start` tells users
// to, gcloud included when it is installed. Where a client disagrees with the emulator,
// the emulator is wrong.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const jws = require('jws');
const {spawn} = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const {OAuth2Client, UserRefreshClient} = require('google-auth-library');
const {TpuClient} = require('@google-cloud/tpu').v2;
const {google} = require('googleapis');

const endpoint = process.env.TPUFLEET_EMULATOR_ENDPOINT;
assert.ok(endpoint, 'TPUFLEET_EMULATOR_ENDPOINT=host:port must be set (run.sh sets it)');
const [host, portText] = endpoint.split(':');
const port = Number(portText);
const base = `http://${endpoint}`;
const tokenUrl = `${base}/token`;

const PROJECT = 'fidelity';
const ZONE = 'us-central2-b';
const PARENT = `projects/${PROJECT}/locations/${ZONE}`;
const CLIENT = {clientId: 'fidelity-client', clientSecret: 'fidelity-secret', refreshToken: 'fidelity-refresh'};
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

const tokenFile = process.env.TPUFLEET_EMULATOR_TOKEN_FILE;
assert.ok(tokenFile, 'TPUFLEET_EMULATOR_TOKEN_FILE must be set (run.sh sets it)');
const ownerToken = fs.readFileSync(tokenFile, 'utf8').trim();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The emulator's own admin endpoint (faults on command), with the owner's secret.
async function admin(method, urlPath, body) {
  const res = await fetch(base + urlPath, {
    method,
    headers: {'content-type': 'application/json', authorization: `Bearer ${ownerToken}`},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${urlPath}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// Enums decode as names or numbers depending on the client; both are right.
function enumIs(value, name, number) {
  assert.ok(value === name || value === number, `expected ${name} (${number}), got ${JSON.stringify(value)}`);
}

function nodeBody(type = 'v4-8') {
  return {acceleratorType: type, runtimeVersion: 'tpu-ubuntu2204-base'};
}

function gapicClient() {
  // authorized_user credentials whose token endpoint is the emulator's.
  const authClient = new UserRefreshClient({...CLIENT, endpoints: {oauth2TokenUrl: tokenUrl}});
  return new TpuClient({fallback: true, protocol: 'http', apiEndpoint: host, port, authClient});
}

// googleapis' generated client of API `version` ('v2', or 'v2alpha1' as gcloud's alpha
// track speaks it).
function discoveryClient(version = 'v2') {
  const auth = new google.auth.OAuth2({
    clientId: CLIENT.clientId,
    clientSecret: CLIENT.clientSecret,
    endpoints: {oauth2TokenUrl: tokenUrl},
  });
  auth.setCredentials({refresh_token: CLIENT.refreshToken});
  return google.tpu({version, auth, rootUrl: `${base}/`});
}


// Runs a program and resolves to {status, stdout, stderr, error} without blocking the
// event loop: a loop blocked for seconds (spawnSync) keeps in the clients' pool a
// keep-alive socket the emulator closed meanwhile, and the next request meets "socket
// hang up" (seen on a loaded machine, gcloud taking over 5 s).
function run(program, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(program, args, options);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', (error) => resolve({status: null, stdout, stderr, error}));
    child.on('close', (status) => resolve({status, stdout, stderr}));
  });
}
test('token endpoint', async (t) => {
  await t.test('authorized_user refresh grant (google-auth-library)', async () => {
    const client = new UserRefreshClient({...CLIENT, endpoints: {oauth2TokenUrl: tokenUrl}});
    const {token} = await client.getAccessToken();
    assert.match(token, /^ya29\./);
  });

  const key = JSON.parse(fs.readFileSync(process.env.TPUFLEET_FIDELITY_SA_KEY, 'utf8'));
  const exchange = async (assertion) => {
    const res = await fetch(tokenUrl, {
      method: 'POST',
      headers: {'content-type': 'application/x-www-form-urlencoded'},
      body: new URLSearchParams({grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion}),
    });
    return {status: res.status, json: await res.json()};
  };
  const iat = Math.floor(Date.now() / 1000);
  const claims = {iss: key.client_email, scope: SCOPE, aud: tokenUrl, exp: iat + 3600, iat};

  await t.test('service-account JWT signed as gtoken signs it (jws)', async () => {
    const assertion = jws.sign({header: {alg: 'RS256', kid: key.private_key_id}, payload: claims,
                                secret: key.private_key});
    const {status, json} = await exchange(assertion);
    assert.equal(status, 200, JSON.stringify(json));
    assert.match(json.access_token, /^ya29\./);
    assert.equal(json.token_type, 'Bearer');
    assert.equal(json.expires_in, 3599);
    const api = await fetch(`${base}/v2/${PARENT}/nodes`, {headers: {authorization: `Bearer ${json.access_token}`}});
    assert.equal(api.status, 200);
  });

  await t.test('a JWT signed with another key is refused as Google refuses it', async () => {
    const {privateKey} = crypto.generateKeyPairSync('rsa', {modulusLength: 2048});
    const assertion = jws.sign({header: {alg: 'RS256'}, payload: claims,
                                secret: privateKey.export({type: 'pkcs8', format: 'pem'})});
    const {status, json} = await exchange(assertion);
    assert.equal(status, 400);
    assert.deepEqual(json, {error: 'invalid_grant', error_description: 'Invalid JWT Signature.'});
  });

  await t.test('API calls without an issued token are 401', async () => {
    const res = await fetch(`${base}/v2/${PARENT}/nodes`, {headers: {authorization: 'Bearer made-up'}});
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.status, 'UNAUTHENTICATED');
  });
});

// Issue 10: nothing but the token endpoint answers without a token, and the secret that
// `tpufleet emulator start` prints the path of works in every client it names.
test('the emulator token', async (t) => {
  await t.test('strangers get 401 UNAUTHENTICATED everywhere, admin routes included', async () => {
    for (const [method, urlPath] of [['GET', '/emulator/v1/status'], ['POST', '/emulator/v1/faults'],
                                     ['GET', `/v2/${PARENT}/nodes`], ['GET', '/nowhere']]) {
      for (const headers of [{}, {authorization: 'Bearer tpufleet-emulator'},
                             {authorization: `Bearer ${ownerToken.slice(0, -1)}`}]) {
        const res = await fetch(base + urlPath, {method, headers});
        assert.equal(res.status, 401, `${method} ${urlPath} ${JSON.stringify(headers)}`);
        assert.equal((await res.json()).error.status, 'UNAUTHENTICATED');
      }
    }
  });

  // Each client with its own auth library's OAuth2 client (googleapis bundles one).
  const ownerAuth = (Client = OAuth2Client) => {
    const auth = new Client();
    auth.setCredentials({access_token: ownerToken, expiry_date: Date.now() + 3600 * 1000});
    return auth;
  };

  await t.test('TpuClient (REST) with the token as its credentials', async () => {
    const client = new TpuClient({fallback: true, protocol: 'http', apiEndpoint: host, port, authClient: ownerAuth()});
    const [type] = await client.getAcceleratorType({name: `${PARENT}/acceleratorTypes/v4-8`});
    assert.equal(type.type, 'v4-8');
    const [nodes] = await client.listNodes({parent: PARENT});
    assert.ok(Array.isArray(nodes));
  });

  await t.test('googleapis with the token as its credentials', async () => {
    const tpu = google.tpu({version: 'v2', auth: ownerAuth(google.auth.OAuth2), rootUrl: `${base}/`});
    const res = await tpu.projects.locations.acceleratorTypes.get({name: `${PARENT}/acceleratorTypes/v4-8`});
    assert.equal(res.data.type, 'v4-8');
  });

  await t.test('gcloud with the exports `emulator start` prints', async (t2) => {
    const which = await run('gcloud', ['--version']);
    if (which.error || which.status !== 0) {
      t2.skip('gcloud is not installed');
      return;
    }
    const config = fs.mkdtempSync(path.join(os.tmpdir(), 'fidelity-gcloud-'));
    try {
      const res = await run('gcloud', ['compute', 'tpus', 'tpu-vm', 'accelerator-types', 'describe', 'v4-8',
                                       `--zone=${ZONE}`, `--project=${PROJECT}`, '--format=json'], {
        timeout: 60000,
        env: {
          PATH: process.env.PATH,
          HOME: config,
          CLOUDSDK_CONFIG: config,
          CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU: `${base}/`,
          CLOUDSDK_AUTH_ACCESS_TOKEN_FILE: tokenFile,
          CLOUDSDK_CORE_DISABLE_PROMPTS: '1',
          CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK: '1',
          CLOUDSDK_CORE_DISABLE_USAGE_REPORTING: '1',
        },
      });
      assert.equal(res.status, 0, `gcloud: ${res.stderr}`);
      assert.equal(JSON.parse(res.stdout).type, 'v4-8');
    } finally {
      fs.rmSync(config, {recursive: true, force: true});
    }
  });
});

test('@google-cloud/tpu TpuClient in REST fallback mode', async (t) => {
  const client = gapicClient();
  const ids = ['gapic-a', 'gapic-b', 'gapic-c'];

  await t.test('createNode and poll the operation to the end', async () => {
    // The data disk the nodes name must exist (disks.test.js checks disks in depth).
    const compute = google.compute({version: 'v1', rootUrl: `${base}/`,
                                    headers: {authorization: `Bearer ${ownerToken}`}});
    const insert = await compute.disks.insert({project: PROJECT, zone: ZONE,
                                               requestBody: {name: 'd1', sizeGb: '10', type: 'pd-balanced'}});
    await compute.zoneOperations.wait({project: PROJECT, zone: ZONE, operation: insert.data.name});
    for (const nodeId of ids) {
      const [operation] = await client.createNode({
        parent: PARENT,
        nodeId,
        node: {...nodeBody(), labels: {env: 'dev'}, metadata: {'ssh-keys': 'alice:ssh-ed25519 AAAA alice'},
               dataDisks: [{sourceDisk: `projects/${PROJECT}/zones/${ZONE}/disks/d1`, mode: 'READ_ONLY'}],
               networkConfig: {enableExternalIps: true}, schedulingConfig: {spot: true}},
      });
      assert.equal(operation.metadata === null || typeof operation.metadata, 'object');
      const [node] = await operation.promise();
      assert.equal(node.name, `${PARENT}/nodes/${nodeId}`);
      enumIs(node.state, 'READY', 2);
    }
  });

  await t.test('getNode', async () => {
    const [node] = await client.getNode({name: `${PARENT}/nodes/gapic-a`});
    enumIs(node.state, 'READY', 2);
    enumIs(node.health, 'HEALTHY', 1);
    enumIs(node.apiVersion, 'V2', 4);
    enumIs(node.dataDisks[0].mode, 'READ_ONLY', 2);
    assert.match(String(node.id), /^[0-9]{19}$/);
    assert.equal(node.networkEndpoints.length, 1);
    assert.equal(node.networkEndpoints[0].port, 8470);
    assert.equal(node.networkEndpoints[0].accessConfig.externalIp, node.networkEndpoints[0].ipAddress);
    assert.equal(node.schedulingConfig.spot, true);
    assert.ok(Number(node.createTime.seconds) > 0);
  });

  await t.test('listNodes pages with pageSize 1', async () => {
    const [page, nextRequest] = await client.listNodes({parent: PARENT, pageSize: 1}, {autoPaginate: false});
    assert.equal(page.length, 1);
    assert.ok(nextRequest && nextRequest.pageToken, 'a next page token');
    const [all] = await client.listNodes({parent: PARENT, pageSize: 1});
    assert.deepEqual(all.map((n) => n.name).sort(), ids.map((id) => `${PARENT}/nodes/${id}`));
    const seen = [];
    for await (const node of client.listNodesAsync({parent: PARENT, pageSize: 1})) {
      seen.push(node.name);
    }
    assert.equal(seen.length, 3);
  });

  await t.test('updateNode applies only the update mask', async () => {
    const [operation] = await client.updateNode({
      node: {name: `${PARENT}/nodes/gapic-a`, labels: {env: 'prod'}, description: 'ignored'},
      updateMask: {paths: ['labels']},
    });
    const [node] = await operation.promise();
    assert.deepEqual(node.labels, {env: 'prod'});
    const [again] = await client.getNode({name: `${PARENT}/nodes/gapic-a`});
    assert.ok(!again.description);
    const [op2] = await client.updateNode({
      node: {name: `${PARENT}/nodes/gapic-a`, metadata: {'ssh-keys': 'bob:ssh-ed25519 BBBB bob'}},
      updateMask: {paths: ['metadata']},
    });
    const [patched] = await op2.promise();
    assert.deepEqual(patched.metadata, {'ssh-keys': 'bob:ssh-ed25519 BBBB bob'});
  });

  await t.test('getGuestAttributes gives host keys per worker', async () => {
    const [resp] = await client.getGuestAttributes({name: `${PARENT}/nodes/gapic-b`, workerIds: [''], queryPath: '/'});
    assert.equal(resp.guestAttributes.length, 1);
    const keys = resp.guestAttributes[0].queryValue.items.filter((i) => i.key === 'ssh-ed25519');
    assert.equal(keys.length, 1);
    assert.match(keys[0].value, /^AAAAC3NzaC1lZDI1NTE5/);
  });

  await t.test('stopNode and startNode a single-host node', async () => {
    const [stop] = await client.stopNode({name: `${PARENT}/nodes/gapic-c`});
    const [stopped] = await stop.promise();
    enumIs(stopped.state, 'STOPPED', 8);
    const [start] = await client.startNode({name: `${PARENT}/nodes/gapic-c`});
    const [started] = await start.promise();
    enumIs(started.state, 'READY', 2);
  });

  await t.test('404 and 409 as the client reports them', async () => {
    await assert.rejects(client.getNode({name: `${PARENT}/nodes/missing`}), (e) => {
      assert.equal(e.code, 5);
      assert.equal(e.message, `Resource '${PARENT}/nodes/missing' was not found`);
      assert.equal(e.statusDetails[0].resourceName, `${PARENT}/nodes/missing`);
      return true;
    });
    // gax's REST fallback derives the code from the HTTP status alone
    // (rpcCodeFromHttpStatusCode: 409 -> ABORTED), so Google's 409 ALREADY_EXISTS
    // reaches REST-mode callers as code 10; the message and ResourceInfo say which.
    await assert.rejects(client.createNode({parent: PARENT, nodeId: 'gapic-a', node: nodeBody()}), (e) => {
      assert.equal(e.code, 10);
      assert.equal(e.message, `Resource '${PARENT}/nodes/gapic-a' already exists`);
      assert.equal(e.statusDetails[0].resourceName, `${PARENT}/nodes/gapic-a`);
      return true;
    });
  });

  await t.test('quota: a synchronous 429 is code 8 with ErrorInfo', async () => {
    const fault = await admin('POST', '/emulator/v1/faults', {kind: 'quota', region: 'us-central2', family: 'v4'});
    try {
      await assert.rejects(client.createNode({parent: PARENT, nodeId: 'gapic-quota', node: nodeBody()}), (e) => {
        assert.equal(e.code, 8);
        assert.match(e.message, /Quota limit 'TPUV4PerProjectPerRegionForTPUAPI' has been exceeded/);
        assert.equal(e.reason, 'RESOURCE_QUOTA_EXCEEDED');
        assert.equal(e.domain, 'googleapis.com');
        return true;
      });
    } finally {
      await admin('DELETE', `/emulator/v1/faults/${fault.id}`);
    }
  });

  await t.test('stockout: the operation fails with code 8', async () => {
    const fault = await admin('POST', '/emulator/v1/faults', {kind: 'stockout', zone: ZONE, family: 'v4'});
    try {
      const [operation] = await client.createNode({parent: PARENT, nodeId: 'gapic-stockout', node: nodeBody()});
      await assert.rejects(operation.promise(), (e) => {
        assert.equal(e.code, 8);
        assert.match(e.message, /^There is no more capacity in the zone "us-central2-b"; you can try in another zone/);
        return true;
      });
    } finally {
      await admin('DELETE', `/emulator/v1/faults/${fault.id}`);
    }
  });

  await t.test('queued resources: create, list, force delete', async () => {
    const [operation] = await client.createQueuedResource({
      parent: PARENT,
      queuedResourceId: 'gapic-qr',
      queuedResource: {
        tpu: {nodeSpec: [{parent: PARENT, nodeId: 'gapic-qr-node', node: nodeBody()}]},
        spot: {},
        queueingPolicy: {validUntilDuration: {seconds: 3600}},
      },
    });
    const [accepted] = await operation.promise();
    assert.equal(accepted.name, `${PARENT}/queuedResources/gapic-qr`);
    let state;
    for (let i = 0; i < 100; ++i) {
      const [qr] = await client.getQueuedResource({name: `${PARENT}/queuedResources/gapic-qr`});
      state = qr.state.state;
      if (state === 'ACTIVE' || state === 6) {
        break;
      }
      await sleep(100);
    }
    enumIs(state, 'ACTIVE', 6);
    const [node] = await client.getNode({name: `${PARENT}/nodes/gapic-qr-node`});
    assert.equal(node.queuedResource, `${PARENT}/queuedResources/gapic-qr`);
    const [qrs] = await client.listQueuedResources({parent: PARENT});
    assert.deepEqual(qrs.map((q) => q.name), [`${PARENT}/queuedResources/gapic-qr`]);
    // FAILED_PRECONDITION is HTTP 400, which gax's REST fallback reports as code 3.
    await assert.rejects(client.deleteQueuedResource({name: `${PARENT}/queuedResources/gapic-qr`}),
                         (e) => e.code === 3 && /force=true/.test(e.message));
    const [del] = await client.deleteQueuedResource({name: `${PARENT}/queuedResources/gapic-qr`, force: true});
    await del.promise();
    await assert.rejects(client.getQueuedResource({name: `${PARENT}/queuedResources/gapic-qr`}), (e) => e.code === 5);
    await assert.rejects(client.getNode({name: `${PARENT}/nodes/gapic-qr-node`}), (e) => e.code === 5);
  });

  await t.test('operations, locations, accelerator types, runtime versions', async () => {
    const ops = [];
    for await (const op of client.listOperationsAsync({name: PARENT})) {
      ops.push(op);
    }
    assert.ok(ops.length >= 5);
    const [op] = await client.getOperation({name: ops[0].name});
    assert.equal(op.name, ops[0].name);
    const locations = [];
    for await (const loc of client.listLocationsAsync({name: `projects/${PROJECT}`})) {
      locations.push(loc.locationId);
    }
    assert.ok(locations.includes(ZONE), locations.join(','));
    const [types] = await client.listAcceleratorTypes({parent: PARENT});
    assert.ok(types.some((x) => x.type === 'v4-32'));
    const [type] = await client.getAcceleratorType({name: `${PARENT}/acceleratorTypes/v4-32`});
    assert.equal(type.acceleratorConfigs[0].topology, '2x2x4');
    const [versions] = await client.listRuntimeVersions({parent: PARENT});
    assert.ok(versions.some((v) => v.version === 'tpu-ubuntu2204-base'));
  });

  await t.test('deleteNode until 404', async () => {
    for (const nodeId of ids) {
      const [operation] = await client.deleteNode({name: `${PARENT}/nodes/${nodeId}`});
      await operation.promise();
      await assert.rejects(client.getNode({name: `${PARENT}/nodes/${nodeId}`}), (e) => e.code === 5);
    }
  });

  await client.close();
});

// With a googleapis client `tpu`: a function that polls an operation with
// operations.get until it is done.
function finisher(tpu) {
  return async (op) => {
    for (let i = 0; i < 200 && !op.done; ++i) {
      await sleep(50);
      op = (await tpu.projects.locations.operations.get({name: op.name})).data;
    }
    assert.ok(op.done, `operation ${op.name} did not finish`);
    return op;
  };
}

// Gets the queued resource `name` with `qrs` (a googleapis client's queuedResources)
// until it is ACTIVE; returns it.
async function untilActive(qrs, name) {
  let qr;
  for (let i = 0; i < 100; ++i) {
    qr = (await qrs.get({name})).data;
    if (qr.state.state === 'ACTIVE') {
      break;
    }
    await sleep(100);
  }
  assert.equal(qr.state.state, 'ACTIVE');
  return qr;
}

test('googleapis discovery client (google.tpu v2)', async (t) => {
  const tpu = discoveryClient();
  const nodes = tpu.projects.locations.nodes;
  const ids = ['disc-a', 'disc-b', 'disc-c'];

  const finish = finisher(tpu);

  await t.test('create, get, and poll operations', async () => {
    for (const nodeId of ids) {
      const res = await nodes.create({parent: PARENT, nodeId, requestBody: {...nodeBody('v4-16'),
                                                                           labels: {env: 'dev'}}});
      assert.equal(res.status, 200);
      assert.equal(res.data.metadata['@type'], 'type.googleapis.com/google.cloud.tpu.v2.OperationMetadata');
      const op = await finish(res.data);
      assert.equal(op.response['@type'], 'type.googleapis.com/google.cloud.tpu.v2.Node');
      assert.equal(op.response.state, 'READY');
    }
    const node = (await nodes.get({name: `${PARENT}/nodes/disc-a`})).data;
    assert.equal(node.state, 'READY');
    assert.equal(node.apiVersion, 'V2');
    assert.equal(node.networkEndpoints.length, 2);
    assert.equal(typeof node.id, 'string');
  });

  await t.test('list with pageSize 1 over 3 nodes', async () => {
    const names = [];
    let pageToken;
    let pages = 0;
    do {
      const res = await nodes.list({parent: PARENT, pageSize: 1, pageToken});
      assert.equal(res.data.nodes.length, 1);
      names.push(res.data.nodes[0].name);
      pageToken = res.data.nextPageToken;
      pages++;
    } while (pageToken && pages < 10);
    assert.deepEqual(names, ids.map((id) => `${PARENT}/nodes/${id}`));
  });

  await t.test('patch labels and metadata', async () => {
    const res = await nodes.patch({
      name: `${PARENT}/nodes/disc-a`,
      updateMask: 'labels,metadata',
      requestBody: {labels: {env: 'prod'}, metadata: {'startup-script': 'echo hi'}, description: 'not in mask'},
    });
    const op = await finish(res.data);
    assert.deepEqual(op.response.labels, {env: 'prod'});
    assert.deepEqual(op.response.metadata, {'startup-script': 'echo hi'});
    assert.equal(op.response.description, undefined);
  });

  await t.test('404, 409 and 429 as the client reports them', async () => {
    await assert.rejects(nodes.get({name: `${PARENT}/nodes/missing`}), (e) => e.code === 404);
    await assert.rejects(nodes.create({parent: PARENT, nodeId: 'disc-a', requestBody: nodeBody()}),
                         (e) => e.code === 409 && /already exists/.test(e.message));
    const fault = await admin('POST', '/emulator/v1/faults', {kind: 'quota', region: 'us-central2'});
    try {
      await assert.rejects(nodes.create({parent: PARENT, nodeId: 'disc-q', requestBody: nodeBody()}),
                           (e) => e.code === 429 && /Quota limit/.test(e.message));
    } finally {
      await admin('DELETE', `/emulator/v1/faults/${fault.id}`);
    }
  });

  await t.test('stockout is a failed operation with code 8', async () => {
    const fault = await admin('POST', '/emulator/v1/faults', {kind: 'stockout', zone: ZONE});
    try {
      const res = await nodes.create({parent: PARENT, nodeId: 'disc-stockout', requestBody: nodeBody()});
      const op = await finish(res.data);
      assert.equal(op.error.code, 8);
      assert.match(op.error.message, /There is no more capacity in the zone "us-central2-b"/);
    } finally {
      await admin('DELETE', `/emulator/v1/faults/${fault.id}`);
    }
  });

  await t.test('queued resources: create, list, force delete', async () => {
    const qrs = tpu.projects.locations.queuedResources;
    const res = await qrs.create({
      parent: PARENT,
      queuedResourceId: 'disc-qr',
      requestBody: {
        tpu: {nodeSpec: [{parent: PARENT, multisliceParams: {nodeCount: 2, nodeIdPrefix: 'disc-ms'},
                          node: nodeBody()}]},
        guaranteed: {},
      },
    });
    const op = await finish(res.data);
    assert.equal(op.response['@type'], 'type.googleapis.com/google.cloud.tpu.v2.QueuedResource');
    await untilActive(qrs, `${PARENT}/queuedResources/disc-qr`);
    const ms = (await nodes.get({name: `${PARENT}/nodes/disc-ms-1`})).data;
    assert.equal(ms.multisliceNode, true);
    const list = (await qrs.list({parent: PARENT})).data;
    assert.deepEqual(list.queuedResources.map((q) => q.name), [`${PARENT}/queuedResources/disc-qr`]);
    const del = await qrs.delete({name: `${PARENT}/queuedResources/disc-qr`, force: true});
    const done = await finish(del.data);
    assert.equal(done.response['@type'], 'type.googleapis.com/google.protobuf.Empty');
    await assert.rejects(qrs.get({name: `${PARENT}/queuedResources/disc-qr`}), (e) => e.code === 404);
  });

  await t.test('delete nodes', async () => {
    for (const nodeId of ids) {
      await finish((await nodes.delete({name: `${PARENT}/nodes/${nodeId}`})).data);
    }
    const res = await nodes.list({parent: PARENT});
    assert.equal(res.data.nodes, undefined);
  });
});

// Issue 15: the alpha track. googleapis' v2alpha1 client sends an alpha-only field
// (autocheckpointEnabled) and a QueuedResource with v2alpha1's multiNodeParams; both come
// back on v2alpha1, while the v2 client sees the same node without them. Partial
// responses (the `fields` system parameter) as the client sends them.
test('googleapis discovery client (google.tpu v2alpha1)', async (t) => {
  const alpha = discoveryClient('v2alpha1');
  const v2 = discoveryClient('v2');
  const nodes = alpha.projects.locations.nodes;
  const finish = finisher(alpha);

  await t.test('create with an alpha field, get, list', async () => {
    const res = await nodes.create({
      parent: PARENT,
      nodeId: 'alpha-a',
      requestBody: {...nodeBody(), autocheckpointEnabled: true,
                    schedulingConfig: {provisioningModel: 'STANDARD'}},
    });
    assert.equal(res.data.metadata['@type'], 'type.googleapis.com/google.cloud.tpu.v2alpha1.OperationMetadata');
    const op = await finish(res.data);
    assert.equal(op.response['@type'], 'type.googleapis.com/google.cloud.tpu.v2alpha1.Node');
    assert.equal(op.response.autocheckpointEnabled, true);
    const node = (await nodes.get({name: `${PARENT}/nodes/alpha-a`})).data;
    assert.equal(node.state, 'READY');
    assert.equal(node.apiVersion, 'V2_ALPHA1');
    assert.equal(node.autocheckpointEnabled, true);
    assert.equal(node.schedulingConfig.provisioningModel, 'STANDARD');
    const seenByV2 = (await v2.projects.locations.nodes.get({name: `${PARENT}/nodes/alpha-a`})).data;
    assert.equal(seenByV2.state, 'READY');
    assert.equal(seenByV2.autocheckpointEnabled, undefined);
    const list = (await nodes.list({parent: PARENT, fields: 'nodes(name,autocheckpointEnabled)'})).data;
    assert.deepEqual(list, {nodes: [{name: `${PARENT}/nodes/alpha-a`, autocheckpointEnabled: true}]});
  });

  await t.test('v2 refuses the alpha field as Google refuses an unknown one', async () => {
    await assert.rejects(
        v2.projects.locations.nodes.create({parent: PARENT, nodeId: 'alpha-b',
                                            requestBody: {...nodeBody(), autocheckpointEnabled: true}}),
        (e) => e.code === 400 && /Unknown name "autocheckpointEnabled"/.test(e.message));
  });

  await t.test('queued resource with multiNodeParams, deleted with force', async () => {
    const qrs = alpha.projects.locations.queuedResources;
    const res = await qrs.create({
      parent: PARENT,
      queuedResourceId: 'alpha-qr',
      requestBody: {
        tpu: {nodeSpec: [{parent: PARENT, node: nodeBody(),
                          multiNodeParams: {nodeCount: 2, nodeIdPrefix: 'alpha-ms',
                                            workloadType: 'THROUGHPUT_OPTIMIZED'}}]},
        spot: {},
        provisioningModel: 'SPOT',
      },
    });
    const op = await finish(res.data);
    assert.equal(op.response['@type'], 'type.googleapis.com/google.cloud.tpu.v2alpha1.QueuedResource');
    const qr = await untilActive(qrs, `${PARENT}/queuedResources/alpha-qr`);
    assert.equal(qr.provisioningModel, 'SPOT');
    assert.equal(qr.tpu.nodeSpec[0].multiNodeParams.workloadType, 'THROUGHPUT_OPTIMIZED');
    const ms = (await nodes.get({name: `${PARENT}/nodes/alpha-ms-1`})).data;
    assert.equal(ms.multisliceNode, true);
    assert.equal(ms.schedulingConfig.spot, true);
    const done = await finish((await qrs.delete({name: `${PARENT}/queuedResources/alpha-qr`, force: true})).data);
    assert.equal(done.response['@type'], 'type.googleapis.com/google.protobuf.Empty');
  });

  await t.test('delete', async () => {
    await finish((await nodes.delete({name: `${PARENT}/nodes/alpha-a`})).data);
    await assert.rejects(nodes.get({name: `${PARENT}/nodes/alpha-a`}), (e) => e.code === 404);
  });
});

// Issue 14: a credential revoked mid-run. `tpufleet emulator token rotate` (POST
// /emulator/v1/token:rotate) writes a new secret to the token file, and from then on
// Google's clients meet the old one as they meet a revoked token: 401 UNAUTHENTICATED,
// code 16 in gax. Last, since it revokes the secret the tests above use.
test('a rotated emulator token (last: it revokes the one above)', async () => {
  const res = await fetch(`${base}/emulator/v1/token:rotate`,
                          {method: 'POST', headers: {authorization: `Bearer ${ownerToken}`}});
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), {rotated: true});
  const fresh = fs.readFileSync(tokenFile, 'utf8').trim();
  assert.notEqual(fresh, ownerToken);
  assert.ok(fresh.startsWith('tpufleet-emulator-'));
  assert.equal(fs.statSync(tokenFile).mode & 0o777, 0o600);
  const as = (token) => {
    const auth = new OAuth2Client();
    auth.setCredentials({access_token: token, expiry_date: Date.now() + 3600 * 1000});
    return auth;
  };
  const gapic = (token) => new TpuClient({fallback: true, protocol: 'http', apiEndpoint: host, port,
                                          authClient: as(token)});
  await assert.rejects(gapic(ownerToken).listNodes({parent: PARENT}),
                       (e) => e.code === 16 && /invalid authentication credentials/.test(e.message));
  const revoked = google.tpu({version: 'v2', auth: as(ownerToken), rootUrl: `${base}/`});
  await assert.rejects(revoked.projects.locations.nodes.list({parent: PARENT}),
                       (e) => Number(e.code) === 401 || e.status === 401);
  const [nodes] = await gapic(fresh).listNodes({parent: PARENT});
  assert.ok(Array.isArray(nodes));
});
