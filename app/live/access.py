"""Who is asking: the signed, HttpOnly cookies of the instructor's device, of a class's host, of
its projector and of its students.

The instructor cookie remembers a device that gave the instructor password (it holds a keyed
digest of the password, so a new password forgets every device). The host cookie holds the
class's host token (also the secret of the co-host link); the projector's holds the screen
token, derived from the host token one way (it opens the projector's view and nothing else); a
student's holds their participant token. All are signed with the server's key (kept in the data
folder when not configured), so a restart keeps everyone in their class. A token alone is not
trusted: the class row must hold it too, so a deleted class or a removed student is gone.
"""

import hashlib
import hmac
import secrets
from http.cookies import SimpleCookie

from itsdangerous import BadSignature, URLSafeSerializer
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

HOST_SALT = "atlas-live-host"
SCREEN_SALT = "atlas-live-screen"
INSTRUCTOR_SALT = "atlas-live-instructor"
INSTRUCTOR_COOKIE = "atlas-instructor"
DAY_S = 60 * 60 * 24
STUDENT_SALT = "atlas-live-student"
STUDENT_PREFIX = "atlas-class-"
COOKIE_AGE = 60 * 60 * 24 * 30


def host_cookie(code: str) -> str:
    return f"atlas-host-{code}"


def screen_cookie(code: str) -> str:
    return f"atlas-screen-{code}"


def student_cookie(code: str) -> str:
    return f"{STUDENT_PREFIX}{code}"


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", ""))


def _read(request: Request, name: str, salt: str) -> str | None:
    raw = request.cookies.get(name)
    if not raw:
        return None
    try:
        value = URLSafeSerializer(request.app.state.settings.secret_key, salt=salt).loads(raw)
    except BadSignature:
        return None
    return value if isinstance(value, str) else None


def _set(
    request: Request,
    response: Response,
    name: str,
    value: str,
    salt: str,
    path: str,
    max_age: int = COOKIE_AGE,
) -> None:
    signed = URLSafeSerializer(request.app.state.settings.secret_key, salt=salt).dumps(value)
    response.set_cookie(
        name,
        signed,
        path=path,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


# A host or projector cookie holds the class's token and, after this, a mark of the device it
# was given to: two devices let in with one key (the co-host or projector link) hold two
# cookies, so each has a dashboard or projector view of its own (device_of).
DEVICE_MARK = "."


def _for_device(token: str) -> str:
    return f"{token}{DEVICE_MARK}{secrets.token_urlsafe(6)}"


def _holds(held: str | None, token: str) -> bool:
    """A cookie's value is ``token`` for some device."""
    return held is not None and hmac.compare_digest(held.split(DEVICE_MARK, 1)[0], token)


def is_host(request: Request, code: str, host_token: str) -> bool:
    """The request carries this class's host cookie."""
    return _holds(_read(request, host_cookie(code), HOST_SALT), host_token)


def signed_host(request: Request, code: str) -> bool:
    """The request carries a host cookie this server signed for class ``code`` (whether it is
    the class's now, the database says)."""
    return _read(request, host_cookie(code), HOST_SALT) is not None


def holds_cookie_for(request: Request, code: str) -> bool:
    """The request carries a cookie this server signed for class ``code`` (its host's or a
    student's), valid or not for the class now: it was given the code."""
    return (
        signed_host(request, code) or _read(request, student_cookie(code), STUDENT_SALT) is not None
    )


def let_host_in(request: Request, response: Response, code: str, host_token: str) -> None:
    _set(
        request,
        response,
        host_cookie(code),
        _for_device(host_token),
        HOST_SALT,
        f"{_root(request)}/class/{code}",
    )


def device_of(request: Request, code: str) -> str:
    """The class's host or projector cookie as this device holds it: what tells one device's
    dashboard or projector from another's (two tabs of one browser share it)."""
    return request.cookies.get(host_cookie(code)) or request.cookies.get(screen_cookie(code)) or ""


def screen_token(host_token: str) -> str:
    """The projector's token of a class: from its host token, which it does not reveal."""
    return hashlib.sha256(f"atlas-screen:{host_token}".encode()).hexdigest()[:32]


def is_viewer(request: Request, code: str, host_token: str) -> bool:
    """The request carries this class's projector cookie."""
    return _holds(_read(request, screen_cookie(code), SCREEN_SALT), screen_token(host_token))


def let_viewer_in(request: Request, response: Response, code: str, host_token: str) -> None:
    token = _for_device(screen_token(host_token))
    path = f"{_root(request)}/class/{code}"
    _set(request, response, screen_cookie(code), token, SCREEN_SALT, path)


def _device_mark(request: Request) -> str:
    """What the instructor cookie holds: the password keyed with the signing key (the cookie's
    payload is readable; without the key it tells nothing of the password)."""
    settings = request.app.state.settings
    key, password = settings.secret_key.encode(), settings.instructor_password.encode()
    return hmac.new(key, b"instructor:" + password, hashlib.sha256).hexdigest()[:32]


def is_instructor(request: Request) -> bool:
    """The device gave the instructor password (the present one) within the retention."""
    held = _read(request, INSTRUCTOR_COOKIE, INSTRUCTOR_SALT)
    return held is not None and hmac.compare_digest(held, _device_mark(request))


def remember_instructor(request: Request, response: Response) -> None:
    """Remember the device as the instructor's for as long as its classes are kept."""
    days = request.app.state.settings.class_retention_days
    path = f"{_root(request)}/class"
    mark = _device_mark(request)
    _set(request, response, INSTRUCTOR_COOKIE, mark, INSTRUCTOR_SALT, path, round(days * DAY_S))


def student_token(request: Request, code: str) -> str | None:
    return _read(request, student_cookie(code), STUDENT_SALT)


def let_student_in(request: Request, response: Response, code: str, token: str) -> None:
    # Path /: the lesson's own requests carry it too, so the confirmation's queue can tell
    # one student from another (ParticipantKey below).
    _set(request, response, student_cookie(code), token, STUDENT_SALT, f"{_root(request)}/")


def stable_key(token: str) -> str:
    """A student's key for fair queues: stable, and not their token (which is a credential)."""
    return "student-" + hashlib.sha256(token.encode()).hexdigest()[:16]


class ParticipantKey:
    """Sets ``request.state.participant`` for a request that carries a valid student cookie, so
    the confirmation's fair queue treats each student of a class as their own client (a whole
    class behind one classroom address is thirty clients, not one). A request without such a
    cookie passes untouched: without a class nothing changes."""

    def __init__(self, app: ASGIApp, secret_key: str) -> None:
        self.app = app
        self.serializer = URLSafeSerializer(secret_key, salt=STUDENT_SALT)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"cookie" and STUDENT_PREFIX.encode() in value:
                    self._mark(scope, value.decode("latin-1"))
                    break
        await self.app(scope, receive, send)

    def _mark(self, scope: Scope, header: str) -> None:
        cookies = SimpleCookie()
        try:
            cookies.load(header)
        except Exception:  # a malformed header: no key, as without a class
            return
        for name, morsel in cookies.items():
            if name.startswith(STUDENT_PREFIX):
                try:
                    token = self.serializer.loads(morsel.value)
                except BadSignature:
                    continue
                if isinstance(token, str):
                    scope.setdefault("state", {})["participant"] = stable_key(token)
                    return
