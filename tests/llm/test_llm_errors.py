"""ProviderError construction: verbatim messages, trimming, HTML stripping, body formats."""

from __future__ import annotations

from gigi_core.errors import GigiError
from gigi_core.llm import ProviderError
from gigi_core.llm.errors import (
    MAX_MESSAGE_CHARS,
    body_message,
    classify_status,
    error_details,
    strip_html,
    trim,
)
from gigi_core.testing.fake_providers import DEFAULT_HTML


def test_provider_error_is_a_gigi_error_with_metadata() -> None:
    err = ProviderError(
        "openai", "The model `gpt-99` does not exist", error_class="not_found", status=404
    )
    assert isinstance(err, GigiError)
    assert "The model `gpt-99` does not exist" in str(err)
    assert "HTTP 404" in str(err)
    assert err.to_dict()["error_class"] == "not_found"


def test_trim_keeps_short_and_cuts_long() -> None:
    assert trim("  short  ") == "short"
    long = "x" * 5000
    cut = trim(long)
    assert len(cut) < MAX_MESSAGE_CHARS + 20 and cut.endswith("[truncated]")
    assert len(ProviderError("p", long, error_class="server").provider_message) < 2100


def test_strip_html_drops_markup_scripts_and_styles() -> None:
    text = strip_html(DEFAULT_HTML)
    assert text == "502 Bad Gateway nginx"
    assert body_message(DEFAULT_HTML, "text/html", 502) == "502 Bad Gateway nginx"
    assert body_message("", None, 503) == "empty response body (HTTP 503)"


def test_classify_status() -> None:
    expected = {400: "bad_request", 401: "auth", 402: "credit", 403: "permission"}
    expected |= {404: "not_found", 408: "timeout", 409: "conflict", 429: "rate_limited"}
    expected |= {500: "server", 503: "server", 529: "overloaded", 422: "bad_request"}
    for status, cls in expected.items():
        assert classify_status(status) == cls


def test_error_details_openai() -> None:
    body = {"error": {"message": "Unsupported value", "type": "invalid_request_error"}}
    details = error_details(body)
    assert details is not None and details.message == "Unsupported value"
    assert details.code == "invalid_request_error" and not details.credit


def test_error_details_openai_insufficient_quota_is_credit() -> None:
    body = {"error": {"message": "You exceeded your quota", "type": "insufficient_quota"}}
    assert error_details(body).credit  # type: ignore[union-attr]


def test_error_details_openrouter_raw_is_verbatim() -> None:
    raw = "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream."
    body = {
        "error": {
            "code": 429,
            "message": "Provider returned error",
            "metadata": {"provider_name": "Google", "raw": raw},
        }
    }
    details = error_details(body)
    assert details is not None and raw in details.message and "Google" in details.message
    assert details.status == 429


def test_error_details_anthropic_spend_limit_is_credit() -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "limit",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    }
    details = error_details(body)
    assert details is not None and details.credit and details.code == "rate_limit_error"


def test_error_details_gemini_retry_info() -> None:
    body = {
        "error": {
            "code": 429,
            "message": "quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46.5s"},
            ],
        }
    }
    details = error_details(body)
    assert details is not None and details.retry_delay == 46.5
    assert details.code == "RESOURCE_EXHAUSTED"


def test_error_details_ignores_non_errors() -> None:
    assert error_details({"choices": []}) is None
    assert error_details(["x"]) is None
    assert error_details({"error": "plain"}).message == "plain"  # type: ignore[union-attr]
