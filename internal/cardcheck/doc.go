// Package cardcheck validates an A2A agent card against the platform's subset of A2A
// (docs/architecture.md §3) and derives the connector.CardProfile the rest of the connector works
// from. It reads A2A 0.2/0.3 and 1.0 cards, keeps every field, and chooses the interface the
// connector calls: its binding (JSON-RPC, HTTP+JSON or gRPC), URL and version.
//
// It does no I/O: the bytes come from internal/cardfetch (or a test). It never fails, it reports:
// every finding is a connector.Problem with the JSON path into the card as served, a stable code
// and a message for the tenant. It does not choose HTTP statuses for the console.
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
//   - Two card generations, one set of rules. A card without a top-level url and with
//     supportedInterfaces is an A2A 1.0 card; every other card is read as 0.2/0.3. A card with
//     both (the 0.3 face of a dual-version SDK) is a 0.x card whose supportedInterfaces are read
//     too. Only where the agent is and the security shapes differ; name, description, version,
//     capabilities, modes, skills, extensions and size limits are the same rules at the same paths.
//   - Interface choice (connector.CardProfile.EndpointURL, EndpointBinding, ProtocolVersion,
//     EndpointTenant; interfaces.go): a 1.0 card's first supportedInterfaces entry the connector
//     speaks (JSONRPC, HTTP+JSON, or GRPC with an http(s) URL; 1.x or 0.2.x/0.3.x), in the
//     card's order; a 0.x card's own endpoint (url in its preferredTransport: absent or JSONRPC,
//     HTTP+JSON/REST, GRPC; else the first additionalInterfaces entry with one of those), after
//     a 1.x JSON-RPC entry a dual SDK added. Fallback is the next spoken interface of another
//     generation or binding. ProtocolVersion and the versions in Fallback are as the card
//     states them.
//   - Only the chosen interface's URL must be an absolute https URL (error at its path); a
//     fallback that is not is a warning and is dropped. Other entries need url, protocolBinding
//     and protocolVersion (required), not a URL: gRPC entries may carry host:port. A gRPC entry
//     without an http(s) scheme (host:port, grpc://, grpcs://) is called in the scheme the card
//     was served with (CheckAt; grpcs:// is https) and warned about; without the card's URL
//     (Check) it is not called. The same holds in a 0.x card for url with preferredTransport
//     GRPC and for GRPC additionalInterfaces entries (a2a-go v0.3's gRPC sample writes
//     "127.0.0.1:9000", @a2a-js/sdk 0.3's README "localhost:4001"): their urls must be absolute
//     URLs or, on a GRPC interface, such an address (invalid_url otherwise).
//   - A 1.0 card with no entry the connector speaks is unsupported_transport at
//     supportedInterfaces, naming every offer ("GRPC 1.0 (supportedInterfaces[0])"), or, when it
//     offers JSONRPC only in versions other than 1.x/0.2.x/0.3.x, unsupported_protocol_version
//     there; beside a usable entry, such a JSONRPC entry is a warning at its protocolVersion. A
//     0.x card with no endpoint the connector speaks anywhere keeps the error at
//     preferredTransport. A 0.x card's own protocolVersion outside 0.2.x/0.3.x
//     is a warning (a 0.x-shaped card stating 1.x is spoken to in 1.0, as stated).
//   - 1.0 cards are protobuf messages that SDKs serve with defaults filled in: an empty string or
//     list means unset ("tenant": "" is no tenant; a skill's "inputModes": [] uses the defaults,
//     where in a 0.x card [] is a list without text/plain). Empty default mode lists are still
//     an error: the card must say text/plain somewhere.
//   - The bare mode "text" counts as text/plain: both SDKs' samples and quickstarts declare it.
//   - Security schemes are read in the form each is written, whatever the card's generation: 0.x
//     {"type", "in", "name"}; 1.0 {"apiKeySecurityScheme": {"location", "name"}} (and
//     httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme,
//     mtlsSecurityScheme); and {"scheme": {"$case": "apiKeySecurityScheme", "value": {...}}}, the
//     ts-proto form @a2a-js/sdk 1.x serves. Problems sit at the member as served
//     (securitySchemes.key.apiKeySecurityScheme.location). An entry of no recognizable kind in a
//     1.0 card is required at securitySchemes.<name>; one with two kinds is invalid.
//   - Requirements: 1.0 securityRequirements [{"schemes": {name: scopes}}], where scopes may be
//     {"list": [...]}, a plain list, null or {}; an element without "schemes" is read as a 0.x
//     requirement. A 1.0 card reads securityRequirements, a 0.x card security; when the card's own
//     list is absent or empty ([] as SDKs serve it), the other one is read (a 1.0 card that kept
//     its 0.x security, the 0.3 face of a dual SDK). unsupported_security sits at the list read.
//     Skills: securityRequirements or security, the same way.
//   - Extension URIs compare exactly (after trimming spaces). Optional unsupported extensions
//     raise nothing; they are simply not activated.
//   - Intent extension input schemas come from the extension's params.skills[] = [{"id",
//     "inputSchema"}] (the format of the platform's intent-extension guide), and, for skills not
//     listed there, from an "inputSchema" member on the skill object. Either must be a JSON
//     object; its contents are not checked (the guide's own example uses "type": "int"). Entries
//     naming no skill of the card are a warning (unknown_skill). Without the intent extension
//     input schemas are ignored.
package cardcheck
