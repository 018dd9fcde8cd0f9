// verify.mjs verifies a caller-identity token the way docs/api.md tells agent developers to:
// jose's remote JWK set (fetched from the platform's JWKS URL, fetched again on an unknown kid)
// and jwtVerify with the issuer, the audience (the agent's card URL) and ES256.
//
//   node verify.mjs JWKS_URL ISSUER AUDIENCE TOKEN   prints the verified claims as JSON
import { createRemoteJWKSet, jwtVerify } from "jose";

// --- the example of docs/api.md ---
const jwks = createRemoteJWKSet(new URL(process.argv[2]));

async function callerOf(headerValue, issuer, cardUrl) {
  const { payload, protectedHeader } = await jwtVerify(headerValue, jwks, {
    issuer,
    audience: cardUrl,
    algorithms: ["ES256"],
    requiredClaims: ["sub", "exp", "iat", "jti"],
    maxTokenAge: "5m",
  });
  return { user: payload.sub, kid: protectedHeader.kid, payload };
}
// --- end of the example ---

const [, , , issuer, audience, token] = process.argv;
try {
  const caller = await callerOf(token, issuer, audience);
  process.stdout.write(JSON.stringify(caller) + "\n");
} catch (err) {
  process.stderr.write(`verify: ${err.code ?? ""} ${err.message}\n`);
  process.exit(1);
}
