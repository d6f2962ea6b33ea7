"""A plain Messages API call for maintenance jobs (notebook summaries); never raises.

The consolidation digest has its own module (consolidate/llm_digest.py) with its stricter
answer checks. The SDK is imported lazily: it takes seconds to import.
"""

from __future__ import annotations

from typing import Any

import structlog

from minionsd.memory.app import App
from minionsd.text.redact import redact

log = structlog.get_logger()
MAX_TOKENS = 2048


def ask(app: App, system: str, prompt: str, purpose: str) -> str | None:
    """The model's text answer, or None when no key is configured or anything fails."""
    api_key = app.llm_api_key()
    if not api_key:
        return None
    prompt = redact(prompt)  # no secret reaches a prompt, whatever file the text came from
    cfg = app.config
    try:
        import anthropic

        client = anthropic.Anthropic(api_key=api_key, base_url=cfg["llm.base_url"] or None,
                                     timeout=cfg["llm.timeout_s"],
                                     max_retries=cfg["llm.max_retries"])
        with client:
            message = client.messages.create(
                model=cfg["llm.model"], max_tokens=MAX_TOKENS, system=system,
                messages=[{"role": "user", "content": prompt}])
    except Exception as exc:
        log.warning("llm.call_failed", purpose=purpose, error=type(exc).__name__,
                    detail=str(exc)[:300])
        app.note_event("llm_failure", purpose=purpose, reason=failure_reason(exc))
        return None
    blocks: list[Any] = list(getattr(message, "content", None) or [])
    text = "".join(getattr(b, "text", "") or "" for b in blocks
                   if getattr(b, "type", None) == "text").strip()
    if text:
        app.note_event("llm_ok", purpose=purpose)
    else:
        app.note_event("llm_failure", purpose=purpose, reason="empty answer")
    return text or None


def failure_reason(exc: BaseException) -> str:
    """A short, single-line reason for status: the error class, HTTP status, first words."""
    status = getattr(exc, "status_code", None)
    detail = " ".join(str(exc).split())[:160]
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return f"{head}: {detail}" if detail else head
