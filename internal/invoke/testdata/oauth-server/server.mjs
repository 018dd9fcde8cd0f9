// A real OAuth 2.0 authorization server for the credential tests of internal/invoke:
// oauth2-mock-server (pinned in package.json) on 127.0.0.1, one RS256 key served at /jwks,
// client-credentials tokens signed with it. What this file adds is only what the mock leaves to
// its users: it checks the client (the mock issues to anyone), and lets the test set the token
// lifetime and revoke the client.
//
//   node server.mjs <clientId> <clientSecret> <ttlSeconds>
//
// It prints one JSON line {"url": "..."} when it listens, then one line "issued <ttl>" per token
// and "refused <reason>" per refusal. On stdin: "revoke" refuses the client from then on
// (invalid_client, 401), "ttl <n>" changes the lifetime. It exits when stdin closes.
import { OAuth2Server } from 'oauth2-mock-server';
import basicAuth from 'basic-auth';
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';

const [clientId, clientSecret, ttlArg] = process.argv.slice(2);
let ttl = Number(ttlArg || 3600);
let revoked = false;

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

server.service.on('beforeTokenSigning', (token) => {
  token.payload.exp = Math.floor(Date.now() / 1000) + ttl;
  // A token id, as real servers set: two tokens of one second are then two tokens.
  token.payload.jti = randomUUID();
});

server.service.on('beforeResponse', (resp, req) => {
  const basic = basicAuth(req);
  const id = basic ? basic.name : req.body.client_id;
  const secret = basic ? basic.pass : req.body.client_secret;
  let reason = '';
  if (req.body.grant_type !== 'client_credentials') reason = 'unsupported_grant_type';
  else if (id !== clientId || secret !== clientSecret) reason = 'invalid_client';
  else if (revoked) reason = 'invalid_client';
  if (reason) {
    resp.statusCode = reason === 'invalid_client' ? 401 : 400;
    resp.body = { error: reason, error_description: 'refused by the test server' };
    console.log(`refused ${reason}`);
    return;
  }
  resp.body.expires_in = ttl;
  console.log(`issued ${ttl}`);
});

await server.start(0, '127.0.0.1');
// The mock names itself "localhost", which may resolve to ::1 where it does not listen.
server.issuer.url = `http://127.0.0.1:${server.address().port}`;
console.log(JSON.stringify({ url: server.issuer.url }));

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === 'revoke') revoked = true;
  if (cmd === 'ttl') ttl = Number(arg);
  console.log(`ok ${cmd}`);
});
rl.on('close', async () => {
  await server.stop();
  process.exit(0);
});
