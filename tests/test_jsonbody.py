"""The JSON API's bodies checked before validation: lone surrogates and crowded objects are 422s
at their place in the body, quoted escaped and short, never a 500 or a long wait."""

import json

import pytest
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient

from app.web.jsonbody import MAX_OBJECT_KEYS, read_json

LESSON = '"counts": [2, 6], "means": [1, 3], "eta": 0.1, "w": 10'
API = ["/api/gradient", "/api/confirm"]
JSON = {"content-type": "application/json"}


def post(client: TestClient, path: str, body: str) -> dict[str, object]:
    response = client.post(path, content=body.encode("ascii"), headers=JSON)
    assert response.status_code == 422, response.text
    # The answer is sent whole and is valid UTF-8 JSON: nothing unsendable is echoed.
    (error,) = json.loads(response.content.decode("utf-8"))["detail"]
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize("path", API)
def test_a_lone_surrogate_in_a_value_is_a_422_at_its_place(client: TestClient, path: str) -> None:
    error = post(client, path, '{"counts": [2, 6], "means": [1, "a\\ud800"], "eta": 0.1, "w": 10}')
    assert error["type"] == "string_unicode"
    assert error["loc"] == ["body", "means", 1]
    assert error["input"] == "a\\ud800"


@pytest.mark.parametrize("path", API)
def test_a_lone_surrogate_in_a_key_is_a_422_naming_it_escaped(
    client: TestClient, path: str
) -> None:
    error = post(client, path, f'{{{LESSON}, "x\\udfff": 1}}')
    assert error["type"] == "string_unicode"
    assert error["loc"] == ["body", "x\\udfff"]
    assert "key" in str(error["msg"])


def test_a_surrogate_pair_is_text_like_any_other(client: TestClient) -> None:
    # "\ud83d\ude00" is one character (😀): an unknown field, refused as such, echoed as it is.
    response = client.post(
        "/api/gradient", content=f'{{{LESSON}, "x\\ud83d\\ude00": 1}}'.encode(), headers=JSON
    )
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["type"] == "extra_forbidden"
    assert error["loc"] == ["body", "x\U0001f600"]


def keys(count: int) -> str:
    return ", ".join(f'"k{index}": {index}' for index in range(count))


@pytest.mark.parametrize("path", API)
def test_too_many_keys_are_refused_before_validation(client: TestClient, path: str) -> None:
    error = post(client, path, f"{{{LESSON}, {keys(MAX_OBJECT_KEYS)}}}")
    assert error["type"] == "too_many_keys"
    assert error["loc"] == ["body"]
    assert error["ctx"] == {"keys": MAX_OBJECT_KEYS + 4, "limit": MAX_OBJECT_KEYS}


def test_at_the_limit_each_key_is_validated(client: TestClient) -> None:
    response = client.post(
        "/api/gradient", content=f"{{{LESSON}, {keys(MAX_OBJECT_KEYS - 4)}}}", headers=JSON
    )
    assert response.status_code == 422
    assert {error["type"] for error in response.json()["detail"]} == {"extra_forbidden"}


def test_a_crowded_object_deep_in_the_body_is_named_where_it_is(client: TestClient) -> None:
    body = f'{{"targets": [[1, 2], [3, {{{keys(MAX_OBJECT_KEYS + 1)}}}]], "eta": 0.1, "w": 10}}'
    error = post(client, "/api/gradient", body)
    assert error["type"] == "too_many_keys"
    assert error["loc"] == ["body", "targets", 1, 1]


def test_eighty_thousand_keys_are_one_refusal(client: TestClient) -> None:
    # The attack as sent (its cost is measured by bench/jsonbody.py, not here).
    body = ("{" + LESSON + "".join(f',"k{index}":0' for index in range(80_000)) + "}").encode()
    assert len(body) < 1_048_576  # under the default body limit: the parser does see it
    response = client.post("/api/gradient", content=body, headers=JSON)
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {
                "type": "too_many_keys",
                "loc": ["body"],
                "msg": f"An object with 80004 keys: at most {MAX_OBJECT_KEYS} are read",
                "ctx": {"keys": 80_004, "limit": MAX_OBJECT_KEYS},
            }
        ]
    }


def test_the_first_fault_in_the_body_is_the_one_named() -> None:
    with pytest.raises(RequestValidationError) as raised:
        read_json(b'{"a": ["ok", "\\ud800"], "b": "\\udc00"}')
    assert raised.value.errors()[0]["loc"] == ("body", "a", 1)


def test_bodies_without_faults_read_as_json_does() -> None:
    body = b'{"a": [1, 2.5, "\\u00e9\\ud83d\\ude00", {"b": null}], "c": true}'
    assert read_json(body) == json.loads(body)


def test_what_is_not_json_is_answered_as_before(client: TestClient) -> None:
    response = client.post("/api/gradient", content=b'{"counts": [2,', headers=JSON)
    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"
