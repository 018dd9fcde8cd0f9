// Signs a card with @a2a-js/sdk 1.3.0's generateAgentCardSignature (pinned in package.json):
//
//   node sign.mjs <jku> <kid> < card.json
//
// It makes a fresh ES256 key, and prints one JSON object: {"jwks": {...public key set...},
// "signed": <the card with signatures>, "verifiedBySdk": true|false} — the last from the SDK's
// own verifyAgentCardSignature, so a test knows the SDK agrees with itself.
import { generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';
import { generateKeyPair, exportJWK } from 'jose';

const [jku, kid] = process.argv.slice(2);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const card = JSON.parse(input);

const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
const signed = await generateAgentCardSignature(privateKey, { alg: 'ES256', kid, typ: 'JOSE', jku })(card);
let verifiedBySdk = true;
try {
  await verifyAgentCardSignature(async () => publicKey)(signed);
} catch {
  verifiedBySdk = false;
}
console.log(JSON.stringify({ jwks: { keys: [jwk] }, signed, verifiedBySdk }));
