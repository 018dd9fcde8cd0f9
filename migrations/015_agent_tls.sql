-- TLS of an agent's own. tls_ca_pem is the CA bundle (PEM, CA certificates only) the agent's
-- certificates chain to: its calls, card fetches and token URLs trust it in addition to the
-- system roots and A2AC_AGENT_CA_FILE. It is not a secret (a CA certificate is public) and is
-- stored as sent, at most 64 KiB; null: the process-wide roots alone.
--
-- A client certificate for mutual TLS is a credential like the others: kind 'mtls', its
-- {"certificatePem", "privateKeyPem"} sealed in api_key_ciphertext.
alter table agents
	add column tls_ca_pem text
		constraint agents_tls_ca_pem_size check (octet_length(tls_ca_pem) <= 65536);

alter table agents drop constraint agents_credential_kind;
alter table agents add constraint agents_credential_kind
	check (credential_kind in ('apiKey', 'bearerToken', 'oauth2', 'googleServiceAccount', 'awsSigV4', 'mtls'));
