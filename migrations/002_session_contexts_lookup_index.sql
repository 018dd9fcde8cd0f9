-- session_contexts is read on every turn by (tenant, session, agent). Its secondary index was
-- (tenant_id, agent_id), for deleting an agent's rows. On a fresh database, before the first
-- ANALYZE, the planner took either index for that lookup; with the secondary one it read every
-- row of the agent (all its sessions) and filtered on session_id, so turns slowed down as the
-- table grew (make loadtest: half the rate after 40 s). With session_id in the secondary index
-- both indexes answer the lookup exactly, whatever the statistics say.
drop index session_contexts_agent_idx;
create index session_contexts_agent_idx on session_contexts (tenant_id, agent_id, session_id);
