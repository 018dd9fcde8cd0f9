-- An AWS access key (credentials.awsSigV4) is a credential kind: its sealed plaintext is
-- {"accessKeyId", "secretAccessKey", "sessionToken", "region", "service"} as JSON, in the same
-- api_key_ciphertext column as every other kind. Only the list of kinds changes.
alter table agents
	drop constraint agents_credential_kind,
	add constraint agents_credential_kind
		check (credential_kind in ('apiKey', 'bearerToken', 'oauth2', 'googleServiceAccount', 'awsSigV4'));
