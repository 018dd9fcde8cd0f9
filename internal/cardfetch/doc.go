// Package cardfetch fetches an A2A agent card from a URL a tenant pasted, parses it keeping every
// field, validates it against the platform's subset of A2A (ARCHITECTURE §4) and derives the
// connector.CardProfile the rest of the connector works from.
//
// It fetches only through the SSRF-guarded client it is given (internal/netguard), reads at most
// MaxBytes, follows at most the client's redirects, and accepts only JSON. It does not store
// cards, call agents, or choose HTTP statuses for the console: it reports problems and typed
// fetch errors and leaves those choices to its callers. Validate never fails; it reports. Its
// spans and metrics carry the card URL's host only, never the URL (which may hold a token) or the
// card.
//
// # Fetching: decisions where the design is silent
//
//   - Discovery applies when the pasted URL has no path (or "/") and no query:
//     /.well-known/agent-card.json first, then /.well-known/agent.json. The second is tried only
//     when the first answers 404 or 410, or is not JSON (kind not_json: an HTML page, which
//     single-page apps serve for every path). Any other failure (timeout, 5xx, blocked address,
//     too large) is returned at once. When both fail, the last attempt's error is returned and
//     FetchError.Tried lists both URLs.
//   - JSON content types are application/json and any */*+json. text/plain, and no Content-Type
//     at all, are accepted when the body is one JSON object (static hosts serve .json files like
//     that). text/html and everything else are not_json. A body served as JSON that does not parse
//     is returned as fetched; Validate then reports invalid_json with the parser's reason, which
//     helps the tenant more than "not JSON".
//   - Any 2xx status is a success; every other status is http_status. The timeout covers the
//     whole fetch, discovery and body included. A canceled caller context is kind canceled.
//   - Fetched.ResolvedURL is where the card finally came from (after discovery and redirects).
//
// # Validating: decisions where the design is silent
//
//   - Every value of the wrong JSON type is reported (invalid_type), not only the first, and
//     rules below it stay quiet. null and "" count as missing for required fields.
//   - Strings are limited to 4 KiB in bytes (the tag maxbytes), because the limit protects the
//     store; lists of modes, extensions and interfaces to 50 items; the card to MaxBytes (too_long
//     at the empty path, the rest of the card is still checked). A UTF-8 byte-order mark is
//     skipped; invalid UTF-8 is invalid_json.
//   - Modes: "text/plain" matches case-insensitively and with parameters ("; charset=utf-8");
//     wildcards (text/*, */*) do not count. Extra modes are one warning per list, also for a
//     skill's own inputModes/outputModes.
//   - A missing or empty skill tags list is a warning with code "recommended".
//   - Security short form: a string names a securitySchemes entry when one has that name,
//     otherwise "apiKey" (any case) means the platform header X-API-KEY, and any other string is
//     an unsupported scheme. In the A2A form an empty object {} is an alternative that needs
//     nothing, which makes the key optional (APIKeyRequired false). A reference to an undefined
//     scheme is undefined_scheme at security[i].<name>; an alternative blocked only by undefined
//     or malformed schemes does not add unsupported_security on top. APIKeyHeaders lists
//     X-API-KEY first, then every other header name of a usable apiKey scheme (case-insensitively
//     distinct); it is nil when the card declares no usable apiKey scheme.
//   - A skill's own security list (A2A 0.3) is judged the same way; an unusable one is only a
//     warning (other skills still work), a usable one that needs a key makes APIKeyRequired true.
//   - A2A 0.1 authentication is code legacy_authentication: an error when it is the card's only
//     statement of credentials and names schemes, a warning when the 0.2 form is present too.
//   - An A2A 1.0 card (supportedInterfaces, no top-level url) is one unsupported_protocol_version
//     error at supportedInterfaces; url and protocolVersion are then not also reported missing.
//     Any other protocolVersion outside 0.2.x/0.3.x is a warning with the same code.
//   - Transport names compare case-insensitively. The JSON-RPC interface chosen from
//     additionalInterfaces must be an https URL like the card's url.
//   - Extension URIs compare exactly (after trimming spaces). Optional unsupported extensions
//     raise nothing; they are simply not activated.
//   - Intent extension input schemas come from the extension's params.skills[] = [{"id",
//     "inputSchema"}] (the format of the platform's intent-extension guide), and, for skills not
//     listed there, from an "inputSchema" member on the skill object. Either must be a JSON
//     object; its contents are not checked (the guide's own example uses "type": "int"). Entries
//     naming no skill of the card are a warning (unknown_skill). Without the intent extension
//     input schemas are ignored.
package cardfetch
