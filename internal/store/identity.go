package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	connector "github.com/a2a-connector/a2a-connector"
)

// The caller-identity keys (migration 014): internal/identity creates, rotates and reads them
// through these methods; the store sees only sealed private keys and public JWKs.

// IdentityKeys returns the signing key (RetiredAt zero) and the keys retired at or after
// retiredSince, the signing key first, then the most recently retired.
func (s *Store) IdentityKeys(ctx context.Context, retiredSince time.Time) ([]connector.SigningKey, error) {
	var keys []connector.SigningKey
	err := s.retry.do(ctx, true, func(ctx context.Context) error {
		rows, err := s.pool.Query(ctx,
			`select kid, public_jwk, private_key_ciphertext, private_key_key_id, created_at, coalesce(retired_at, 'epoch'::timestamptz)
			   from identity_keys where retired_at is null or retired_at >= $1
			  order by retired_at desc nulls first, created_at desc`, retiredSince)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (connector.SigningKey, error) {
			var k connector.SigningKey
			err := row.Scan(&k.KID, &k.PublicJWK, &k.Private.Ciphertext, &k.Private.KeyID, &k.CreatedAt, &k.RetiredAt)
			if k.RetiredAt.Equal(time.Unix(0, 0)) {
				k.RetiredAt = time.Time{}
			}
			return k, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read identity keys: %w", classify(err))
	}
	return keys, nil
}

// AddIdentityKey stores k as the signing key. Without rotate it does so only when there is no
// signing key yet: of two processes creating the first key at once, one inserts and the
// other's insert does nothing (the one-signing-key index), and both then read the same key.
// With rotate it retires the signing key, deletes keys retired before dropRetiredBefore and
// inserts k, in one transaction; concurrent rotations take turns (a table lock), each retiring
// the key the previous one inserted.
func (s *Store) AddIdentityKey(ctx context.Context, k connector.SigningKey, rotate bool, dropRetiredBefore time.Time) error {
	const insert = `insert into identity_keys (kid, public_jwk, private_key_ciphertext, private_key_key_id)
	                values ($1, $2, $3, $4) on conflict do nothing`
	args := []any{k.KID, k.PublicJWK, k.Private.Ciphertext, k.Private.KeyID}
	if !validSealed(&k.Private) || k.KID == "" || len(k.PublicJWK) == 0 {
		return fmt.Errorf("add identity key: key without id, public key or sealed private key: %w", connector.ErrInvalid)
	}
	if !rotate {
		if _, err := s.pool.Exec(ctx, insert, args...); err != nil {
			return fmt.Errorf("add identity key %s: %w", k.KID, classify(err))
		}
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// share row exclusive conflicts with itself: rotations run one after the other, while
		// readers (access share) go on.
		if _, err := tx.Exec(ctx, `lock table identity_keys in share row exclusive mode`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update identity_keys set retired_at = now() where retired_at is null`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `delete from identity_keys where retired_at < $1`, dropRetiredBefore); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insert, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("rotate identity key to %s: %w", k.KID, classify(err))
	}
	return nil
}

// IdentityPairwise returns the sealed pairwise secret, storing candidate first when there is
// none yet; of two processes doing so at once, both get the one that was stored first.
func (s *Store) IdentityPairwise(ctx context.Context, candidate connector.Sealed) (connector.Sealed, error) {
	if !validSealed(&candidate) {
		return connector.Sealed{}, fmt.Errorf("identity pairwise secret: empty candidate: %w", connector.ErrInvalid)
	}
	var got connector.Sealed
	err := s.pool.QueryRow(ctx, `
		with ins as (
			insert into identity_pairwise (secret_ciphertext, secret_key_id) values ($1, $2)
			on conflict do nothing returning secret_ciphertext, secret_key_id)
		select secret_ciphertext, secret_key_id from ins
		union all
		select secret_ciphertext, secret_key_id from identity_pairwise
		 where not exists (select 1 from ins)`,
		candidate.Ciphertext, candidate.KeyID).Scan(&got.Ciphertext, &got.KeyID)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another process inserted after this statement's snapshot was taken: the insert
		// waited for it and did nothing, and the select could not see its row yet. A new
		// statement does.
		err = s.pool.QueryRow(ctx, `select secret_ciphertext, secret_key_id from identity_pairwise`).Scan(&got.Ciphertext, &got.KeyID)
	}
	if err != nil {
		return connector.Sealed{}, fmt.Errorf("identity pairwise secret: %w", classify(err))
	}
	return got, nil
}
