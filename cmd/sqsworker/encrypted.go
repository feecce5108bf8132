package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/encrypt"
	"github.com/sqsworker/sqsworker/redrive"
)

// kmsKeysVariable names the KMS key ARNs --decrypt may use (comma-separated).
const kmsKeysVariable = "SQSWORKER_KMS_KEYS"

// decryptFlags are --decrypt and --kms-key: an encrypted payload (package encrypt) is
// shown in clear only when the operator asks, with a key the operator names, and KMS
// lets the operator's credentials decrypt its data key (kms:Decrypt).
type decryptFlags struct {
	decrypt bool
	keys    []string
}

func (f *decryptFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.decrypt, "decrypt", false, "show encrypted payloads in clear (calls KMS Decrypt; needs kms:Decrypt on the key and --kms-key)")
	cmd.Flags().StringSliceVar(&f.keys, "kms-key", nil, "with --decrypt: ARN of a KMS key payloads may be decrypted with (repeat or comma-separate); a payload under another key stays encrypted")
	envFlag(cmd, "kms-key", kmsKeysVariable)
}

// decrypter returns the decrypter of --decrypt, or nil without it. Errors: --kms-key
// without --decrypt or the other way round, a key that is not a KMS key ARN.
func (f *decryptFlags) decrypter(ctx context.Context, a *app) (*encrypt.Decrypter, error) {
	switch {
	case !f.decrypt:
		return nil, nil
	case len(f.keys) == 0:
		return nil, usageError(errors.New("--decrypt needs --kms-key ARN (or " + kmsKeysVariable + "): the keys payloads may be decrypted with"))
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	decrypter, err := encrypt.NewDecrypter(kms.NewFromConfig(cfg), encrypt.DecrypterConfig{AllowedKeys: f.keys, CacheSize: -1})
	if err != nil {
		return nil, usageError(err)
	}
	return decrypter, nil
}

// decryptLetters replaces the body of each encrypted letter with its plaintext, and
// returns an error naming the letters it could not decrypt (those keep their ciphertext
// and say why on stderr).
func (a *app) decryptLetters(ctx context.Context, decrypter *encrypt.Decrypter, letters []redrive.DeadLetter) error {
	failed := 0
	for i := range letters {
		letter := &letters[i]
		if !letter.Encrypted {
			continue
		}
		plaintext, err := decrypter.Decrypt(ctx, letter.Body, letter.MessageAttributes)
		if err != nil {
			failed++
			a.warn("message %s stays encrypted: %v", letter.ID, err)
			continue
		}
		letter.Body, letter.Decrypted = plaintext, true
	}
	if failed > 0 {
		return fmt.Errorf("sqsworker: %s not decrypted (see above)", plural(failed, "encrypted message"))
	}
	return nil
}

// encryptedText is what a text listing shows in place of an encrypted payload.
func encryptedText(key string) string {
	if key == "" {
		key = "unknown: the envelope is malformed"
	}
	return "encrypted (key " + key + "; --decrypt --kms-key ARN shows it)"
}
