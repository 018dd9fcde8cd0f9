-- Initial schema: tenants and their tokens, agents with card revisions, session holds.
--
-- Every key carries the tenant, so a query that forgets the tenant cannot join its way into
-- another tenant's rows. Ids are UUIDs chosen by the application (the agent id is the
-- associated data of the encrypted API key, so it must be known before the insert).

create table tenants (
	id         uuid        primary key,
	name       text        not null check (name <> ''),
	created_at timestamptz not null default now()
);

create table tenant_tokens (
	id         uuid        primary key,
	tenant_id  uuid        not null references tenants (id) on delete cascade,
	-- SHA-256 of the random token; the token itself is shown once and never stored.
	token_hash bytea       not null unique check (octet_length(token_hash) = 32),
	created_at timestamptz not null default now()
);

create index tenant_tokens_tenant_id_idx on tenant_tokens (tenant_id);

create table agents (
	tenant_id          uuid        not null references tenants (id) on delete cascade,
	id                 uuid        not null,
	card_url           text        not null check (card_url <> ''),
	enabled            boolean     not null default true,
	-- AES-256-GCM ciphertext of the tenant's API key for the agent, and the id of the key that
	-- sealed it (for rotation). Both or neither.
	api_key_ciphertext bytea,
	api_key_key_id     text,
	-- The live revision in agent_revisions; the agent's profile is read from there.
	current_revision   integer     not null check (current_revision > 0),
	created_at         timestamptz not null default now(),
	updated_at         timestamptz not null default now(),
	primary key (tenant_id, id),
	constraint agents_tenant_card_url_key unique (tenant_id, card_url),
	constraint agents_api_key_pair check ((api_key_ciphertext is null) = (api_key_key_id is null))
);

create table agent_revisions (
	tenant_id         uuid        not null,
	agent_id          uuid        not null,
	revision          integer     not null check (revision > 0),
	-- The card as fetched (jsonb: key order and whitespace are not kept).
	card              jsonb       not null,
	-- What the platform derived from the card (the connector's CardProfile), and the
	-- validation warnings shown to the tenant.
	profile           jsonb       not null,
	warnings          jsonb       not null default '[]',
	resolved_card_url text        not null,
	fetched_at        timestamptz not null default now(),
	primary key (tenant_id, agent_id, revision),
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

-- An agent always points at a revision that exists. Deferred, because the agent row must exist
-- before its first revision (the FK above) and both are written in one transaction.
alter table agents
	add constraint agents_current_revision_fkey
	foreign key (tenant_id, id, current_revision)
	references agent_revisions (tenant_id, agent_id, revision)
	deferrable initially deferred;

-- A dialog session of the platform, free or held by an agent that answered input-required.
-- A free session keeps its row: last_turn_started_at orders racing turns (an older turn that
-- finishes last never overwrites a newer turn's decision, even after a release).
-- The holding agent has no foreign key (a composite key cannot null only agent_id before
-- PostgreSQL 15): deleting an agent clears its holds in the same transaction, and every read
-- joins agents anyway.
create table sessions (
	tenant_id            uuid        not null references tenants (id) on delete cascade,
	session_id           text        not null check (session_id <> ''),
	hold_agent_id        uuid,
	hold_task_id         text,
	hold_context_id      text,
	-- The turn that created or last refreshed the hold.
	hold_turn_id         text,
	hold_expires_at      timestamptz,
	last_turn_started_at timestamptz not null,
	updated_at           timestamptz not null default now(),
	primary key (tenant_id, session_id),
	constraint sessions_hold_whole check (
		(hold_agent_id is null) = (hold_task_id is null) and
		(hold_agent_id is null) = (hold_expires_at is null))
);

create index sessions_hold_agent_idx on sessions (tenant_id, hold_agent_id) where hold_agent_id is not null;
-- For the sweep of long-idle sessions.
create index sessions_updated_at_idx on sessions (updated_at);

-- The contextId a session last had with an agent, so a new task continues the conversation.
create table session_contexts (
	tenant_id  uuid        not null,
	session_id text        not null,
	agent_id   uuid        not null,
	context_id text        not null,
	updated_at timestamptz not null default now(),
	primary key (tenant_id, session_id, agent_id),
	foreign key (tenant_id, agent_id) references agents (tenant_id, id) on delete cascade
);

create index session_contexts_agent_idx on session_contexts (tenant_id, agent_id);
