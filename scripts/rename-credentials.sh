#!/usr/bin/env bash
# rename-credentials.sh renames the Go names that say "API key" but mean any credential (an API
# key, a bearer token, an OAuth 2.0 client, a Google service account, an AWS key, a client
# certificate), and the comments and messages that say the same. It is re-runnable: each rename
# finds its declaration by a pattern, so it still applies after other branches moved code, and a
# name already renamed is skipped. Names of true API keys stay (CredentialKindAPIKey,
# APIKeyHeader, CardProfile.APIKeyRequired/APIKeyHeaders, agents.Patch.APIKey, the console's
# apiKey member and APIKeySet), and so do the wire names clients use ("api_key",
# "api_key_missing", apiKey, apiKeyRequired, apiKeySet; docs/api.md lists them as aliases).
#
#   scripts/rename-credentials.sh      rename in the module at this script's root
#
# Identifiers are renamed with gopls (type-aware: every reference in every package, tests and
# the e2eotel and e2ek8s build tags included); comments and messages with fixed-string edits.
set -euo pipefail

readonly GOPLS_VERSION=v0.23.0 # the newest gopls the Go proxy here serves for Go 1.26

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

gopls="$(go env GOPATH)/bin/gopls"
if ! "${gopls}" version 2>/dev/null | grep -q "gopls ${GOPLS_VERSION}\$"; then
	GOFLAGS= go install "golang.org/x/tools/gopls@${GOPLS_VERSION}"
fi
# gopls loads packages with go list: the tagged end-to-end files are renamed too.
export GOFLAGS="-tags=e2eotel,e2ek8s"

log() { printf 'rename-credentials: %s\n' "$*" >&2; }

# rename DIR REGEX OLD NEW renames, with gopls, the identifier OLD declared on each line of a
# non-test Go file in DIR (not below it) that matches the extended REGEX, to NEW. No such line:
# already done, skipped.
rename() {
	local dir="$1" re="$2" old="$3" new="$4" hit file line col n=0
	while hit="$(grep -nE -m1 -- "${re}" $(ls "${dir}"/*.go | grep -v '_test\.go$') /dev/null | head -n1)" && [[ -n "${hit}" ]]; do
		file="${hit%%:*}"
		line="${hit#*:}"
		line="${line%%:*}"
		col="$(sed -n "${line}p" "${file}" | awk -v o="${old}" '{ print index($0, o) }')"
		[[ "${col}" -gt 0 ]] || {
			log "${file}:${line}: no ${old} on the line"
			exit 1
		}
		log "${file}:${line}:${col} ${old} -> ${new}"
		"${gopls}" rename -w "${file}:${line}:${col}" "${new}" >/dev/null
		n=$((n + 1))
		[[ "${n}" -lt 10 ]] || {
			log "${old}: still declared after ${n} renames"
			exit 1
		}
	done
	[[ "${n}" -gt 0 ]] || log "${dir}: ${old} -> ${new}: nothing left to rename"
}

# The domain (root package).
rename . '^	APIKeySet +bool' APIKeySet CredentialsSet
rename . '^	ErrAPIKeyMissing += errors\.New' ErrAPIKeyMissing ErrCredentialsMissing
rename . '^	CodeAPIKey += "api_key"' CodeAPIKey CodeCredentials
rename . '^	APIKey +\*Sealed$' APIKey Credential # TurnRequest, NewAgent, AgentPatch
rename . '^	ClearAPIKey bool' ClearAPIKey ClearCredential
# The packages that read or pass a sealed credential of any kind.
rename internal/store '^func \(s \*Store\) AgentSecret\(' AgentSecret AgentCredential
rename internal/agents '^func \(s \*Service\) WithKey\(' WithKey WithCredential
rename internal/probe '^	APIKey \*connector\.Sealed$' APIKey Credential
rename internal/invoke '^func \(inv \*Invoker\) CancelTask\(.* apiKey \*connector\.Sealed' apiKey sealed
rename internal/invoke '^func \(inv \*Invoker\) TaskEnded\(.* apiKey \*connector\.Sealed' apiKey sealed

# edit FILE OLD NEW replaces the fixed string OLD by NEW in FILE (when both exist).
edit() {
	[[ -f "$1" ]] || return 0
	OLD="$2" NEW="$3" perl -0pi -e 's/\Q$ENV{OLD}\E/$ENV{NEW}/g' "$1"
}

# Comments that name a renamed identifier (gopls renames code, not prose).
{ git grep -lwE 'ErrAPIKeyMissing|CodeAPIKey|AgentSecret' -- '*.go' || true; } | while read -r f; do
	perl -pi -e 's/\bErrAPIKeyMissing\b/ErrCredentialsMissing/g; s/\bCodeAPIKey\b/CodeCredentials/g; s/\bAgentSecret\b/AgentCredential/g' "${f}"
done

# The domain's comments (gopls has renamed the identifier a doc comment starts with).
edit agent.go '// ErrCredentialsMissing: the card requires credentials (an API key or another kind) and none are set.' '// ErrCredentialsMissing: the card requires credentials (an API key or another kind) and
	// none are set.'
edit agent.go '// CredentialsSet: a sealed credential is stored (for historical reasons the column and the
	// name are the API key'"'"'s); CredentialSetKind says which kind it is.' '// CredentialsSet: a sealed credential is stored (of any kind; its columns keep the API
	// key'"'"'s name, api_key_*); CredentialSetKind says which kind it is.'
edit agent.go 'Empty: the store picks one — not allowed with an APIKey, whose' 'Empty: the store picks one — not allowed with a Credential, whose'
edit agent.go '// CredentialKind is the kind of credential APIKey seals' '// CredentialKind is the kind of credential Credential seals'
edit agent.go '// Credential replaces the agent'"'"'s key.' '// Credential replaces the agent'"'"'s credential.'
edit agent.go '// CredentialKind is the kind APIKey seals' '// CredentialKind is the kind Credential seals'
edit agent.go '// ClearCredential removes the agent'"'"'s key. Setting it together with APIKey is ErrInvalid.' '// ClearCredential removes the agent'"'"'s credential. Setting it together with Credential is
	// ErrInvalid.'
edit turn.go '// Credential is the agent'"'"'s sealed key, opened only by the invoker; nil means no key.' '// Credential is the agent'"'"'s sealed credential, of any kind, opened only by the invoker; nil
	// means none.'
edit turn.go 'Message never contains the API
// key or the user'"'"'s text' 'Message never contains the
// credentials or the user'"'"'s text'
edit turn.go '(API key missing, wrong or revoked)' '(credentials missing, wrong or revoked)'
edit health.go '(agent disabled, API key missing, caller gone)' '(agent disabled, credentials missing, caller gone)'
edit connector.go '(NewAgent, Revision, AgentPatch, a Sealed key, DuplicateError)' '(NewAgent, Revision, AgentPatch, a Sealed credential, DuplicateError)'

# Other packages' comments and messages.
edit internal/probe/probe.go '// Credential is the agent'"'"'s sealed key, nil when none is set.' '// Credential is the agent'"'"'s sealed credential, nil when none is set.'
edit internal/probe/checks.go 'so that the API key cannot reach another host.' 'so that the credentials cannot reach another host.'
for f in internal/store/*.go; do
	edit "${f}" '// AgentCredential returns the agent'"'"'s stored API key, or nil' '// AgentCredential returns the agent'"'"'s sealed credential, or nil'
	edit "${f}" 'const op = "read API key of agent"' 'const op = "read credential of agent"'
	edit "${f}" ': an API key needs the agent id it was sealed with: %w' ': a credential needs the agent id it was sealed with: %w'
	edit "${f}" ': API key without ciphertext or key id: %w' ': credential without ciphertext or key id: %w'
	edit "${f}" ': both a new API key and clearing it: %w' ': both a new credential and clearing it: %w'
done
for f in internal/cardfetch/url.go docs/api.md; do
	edit "${f}" 'credentials do not belong in a card URL: register the agent'"'"'s API key instead' 'credentials do not belong in a card URL: register them with the agent instead'
done
edit internal/cardcheck/interfaces.go 'sends user messages and API keys only over https' 'sends user messages and credentials only over https'

# The gRPC contract's comments, in the proto and in the code generated from it (same words).
for f in api/proto/connector/v1/connector.proto api/proto/connector/v1/*.pb.go; do
	edit "${f}" 'disabled, API key removed)' 'disabled, credentials removed)'
	edit "${f}" 'card requires an API key, with one set)' 'card requires credentials, with them set)'
	edit "${f}" 'the API key set in the console is' 'the credentials set in the console are'
	edit "${f}" '(the API key would go to another host)' '(the credentials would go to another host)'
done

git ls-files '*.go' | xargs gofmt -l | xargs -r gofmt -w
log "done; check with: go build ./... && go vet ./... && go vet -tags e2eotel,e2ek8s ./..."
