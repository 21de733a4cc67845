package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/evosteer/evosteer-go/internal/redact"
)

// Models lists the model names the endpoint serves (GET /models under the base URL: OpenAI's,
// vLLM's, SGLang's and llama.cpp's `data[].id`), under Do's rules: a reply without a data list,
// or with an entry without an id, is a malformed reply; the names are redacted like every text a
// server sends.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	var ids []string
	err := c.Do(ctx, "models list", http.MethodGet, "/models", nil, func(raw []byte) error {
		var v struct {
			Data []struct {
				ID *string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &v); err != nil || v.Data == nil {
			return fmt.Errorf("%w: no data list of models: %q", ErrMalformed, redact.Cut(string(raw), c.cfg.APIKey, malformedBodyChars))
		}
		ids = make([]string, 0, len(v.Data))
		for i, m := range v.Data {
			if m.ID == nil {
				return fmt.Errorf("%w: models entry %d has no id", ErrMalformed, i+1)
			}
			ids = append(ids, c.redact(*m.ID))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
