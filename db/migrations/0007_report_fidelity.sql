-- 0007: what a report's writer left out or cut (its fidelity records).
--
-- `fidelity` is {budget_tokens, fidelity: [{phase, step, original_tokens, final_tokens, reason,
-- ...}], warnings: [{code, message, phase?, item_ids?}], dropped_content_ids: [...]}: how the
-- evidence was fitted to the LLM writer's input budget, with its warning codes
-- (CONTENT_TRUNCATED, CONTENT_DROPPED, TOKEN_BUDGET_FLOORED, ...) and the ids of the evidence
-- units not given to the model. The offline writer fits nothing: empty lists, as in reports
-- stored before this migration.
ALTER TABLE reports
    ADD COLUMN fidelity jsonb NOT NULL
        DEFAULT '{"fidelity": [], "warnings": [], "dropped_content_ids": []}'::jsonb
        CHECK (jsonb_typeof(fidelity) = 'object');
