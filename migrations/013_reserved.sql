-- Reserved: another change set takes this number. This file holds the sequence together (tern
-- refuses gaps) and is replaced by that change set's migration when both are merged.
select 1;
