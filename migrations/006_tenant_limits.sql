-- The operator's overrides of a tenant's admission caps (internal/admission): the most turns
-- the tenant may have in flight in one connector process, and the most each of its agents may.
-- Null is the process's default (A2AC_TENANT_MAX_TURNS, A2AC_AGENT_MAX_TURNS). Every replica
-- reads the non-null ones every A2AC_LIMITS_REFRESH, never on a turn.
alter table tenants
	add column max_concurrent_turns           integer check (max_concurrent_turns > 0),
	add column max_concurrent_turns_per_agent integer check (max_concurrent_turns_per_agent > 0);
