-- Which interface an agent's turns use (issue 23). A card's preferred interface can refuse the
-- connector's protocol version or binding; a turn then moves to the card's fallback interface
-- once and, when that answers, every later turn goes there at once. The revision the move was
-- made at is kept, so that every replica and the console know it, and a refreshed card (a new
-- live revision) starts over on its own preferred interface. null: the preferred interface.
alter table agents
	add column on_fallback_revision integer;
