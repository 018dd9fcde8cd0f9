// Package cardfetch gets an A2A agent card from a URL a tenant pasted: it checks the URL,
// discovers the card (well-known paths), fetches it through the SSRF-guarded client, caps its
// size, and reports a typed FetchError whose Explain is fit for the tenant (docs/architecture.md
// §3). FetchAndValidate hands the bytes to internal/cardcheck, which judges the card.
//
// It fetches only through the SSRF-guarded client it is given (internal/netguard), reads at most
// MaxBytes, follows at most the client's redirects, and accepts only JSON. It does not parse or
// judge cards (internal/cardcheck does), store them, speak A2A itself (the authenticated extended
// card is asked for through Options.Agents, the wire client turns use: FetchExtended), or choose
// HTTP statuses for the console: it reports typed fetch errors and leaves those choices to its
// callers. Its spans and
// metrics carry the card URL's host only, never the URL (which may hold a token) or the card.
//
// # Fetching: decisions where the design is silent
//
//   - A pasted URL is checked before anything is sent (CheckURL): text that is not UTF-8 or holds
//     control characters, what url.Parse refuses, a relative URL, a scheme other than http(s),
//     userinfo of any kind (user:password@ is refused, never stripped, fetched with or shown), an
//     invalid port or host name (IDNA for internationalized ones) are all kind invalid_url, with
//     a reason that never quotes the URL or the parser.
//   - FetchError.Error is for logs (it keeps the transport's words: resolver, addresses);
//     FetchError.Explain is for the tenant (what failed and where, no transport internals). Both
//     show URLs without userinfo.
//   - Every request carries A2A-Version: 1.0, so a server that speaks both generations answers
//     with its 1.0 card (@a2a-js/sdk with legacy compat answers its 0.3 card otherwise).
//   - Discovery applies when the pasted URL has no path (or "/") and no query:
//     /.well-known/agent-card.json first, then /.well-known/agent.json. The second is tried only
//     when the first answers 404 or 410, or is not JSON (kind not_json: an HTML page, which
//     single-page apps serve for every path). Any other failure (timeout, 5xx, blocked address,
//     too large) is returned at once. When both fail, the last attempt's error is returned and
//     FetchError.Tried lists both URLs.
//   - Any other URL is fetched as pasted first. When it does not answer a card, the same two
//     well-known paths are tried under it ({url}/.well-known/agent-card.json, then agent.json;
//     the query is kept), because SDKs mount agents under a path prefix and tenants paste the
//     agent's endpoint. "Does not answer a card" is: any 4xx (the agent's JSON-RPC endpoint or an
//     app route answers GET with 404, 405, 401...), not JSON (an HTML page), or a JSON object
//     without any member every card has (name, skills, url, supportedInterfaces, capabilities,
//     protocolVersion): a2a-go's JSON-RPC endpoint answers GET with a JSON-RPC error. Under the
//     prefix, 404/410/not JSON move on as in discovery; any other failure there is returned at
//     once (something is there, broken). When nothing answers, the pasted URL's own failure is
//     returned (its JSON body, if it had one, is validated as it is) and FetchError.Tried lists
//     all three URLs. A pasted URL ending in a well-known path is not extended.
//   - JSON content types are application/json and any */*+json. text/plain, and no Content-Type
//     at all, are accepted when the body is one JSON object (static hosts serve .json files like
//     that). text/html and everything else are not_json. A body served as JSON that does not parse
//     is returned as fetched; cardcheck then reports invalid_json with the parser's reason, which
//     helps the tenant more than "not JSON".
//   - Any 2xx status is a success; every other status is http_status. The timeout covers the
//     whole fetch, discovery and body included. A canceled caller context is kind canceled.
//   - Fetched.ResolvedURL is where the card finally came from (after discovery and redirects).
package cardfetch
