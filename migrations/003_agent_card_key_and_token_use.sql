-- One registration per agent, and when each tenant token was last used.
--
-- agents.card_key is the card URL the card was actually fetched from (after discovery and
-- redirects), spelled canonically, with a well-known card path of either A2A generation cut to
-- the prefix it sits under: https://host, https://host/.well-known/agent.json and
-- https://host/.well-known/agent-card.json are one key, so one agent. The store computes it
-- (store.CardKey) on every registration and refresh; unique per tenant, so two racing
-- registrations of one agent cannot both win.
alter table agents add column card_key text check (card_key <> '');

-- Backfill from the live revision, with the same rule written in SQL: lower-cased scheme and
-- host, no default port, no fragment, the well-known suffix cut when there is no query. Rows
-- registered twice before this migration keep their agents: the oldest gets the key, the later
-- ones none (NULLs are distinct), and their next changed refresh is refused with 409 naming the
-- oldest, so the tenant sees the duplicate. The column is nullable for the same reason, and so
-- that the previous release, still serving during a rolling upgrade, can insert agents (without
-- a key; their next changed refresh sets it).
with live as (
	select a.tenant_id, a.id, a.created_at,
	       regexp_replace(r.resolved_card_url, '#.*$', '') as u
	  from agents a
	  join agent_revisions r
	    on r.tenant_id = a.tenant_id and r.agent_id = a.id and r.revision = a.current_revision
), split as (
	select tenant_id, id, created_at,
	       lower(coalesce(substring(u from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*'), '')) as origin,
	       coalesce(substring(u from '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*(.*)$'), u) as rest
	  from live
), keyed as (
	select tenant_id, id, created_at,
	       regexp_replace(regexp_replace(origin, '^(https://.*):443$', '\1'), '^(http://.*):80$', '\1')
	       || case when rest ~ '[?]' then rest
	               else regexp_replace(regexp_replace(rest, '/\.well-known/agent(-card)?\.json$', ''), '^/$', '')
	          end as k
	  from split
), ranked as (
	select tenant_id, id, k,
	       row_number() over (partition by tenant_id, k order by created_at, id) as n
	  from keyed
	 where k <> ''
)
update agents a
   set card_key = ranked.k
  from ranked
 where ranked.n = 1 and a.tenant_id = ranked.tenant_id and a.id = ranked.id;

alter table agents add constraint agents_tenant_card_key_key unique (tenant_id, card_key);

-- When the token last authenticated a console request, to the minute: the store writes it at
-- most once a minute per token (null: never used).
alter table tenant_tokens add column last_used_at timestamptz;
