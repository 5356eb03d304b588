"""Every error of duequeue/errors.py has its HTTP status in problems.py's one mapping, and the
OpenAPI document lists each route's error statuses from it."""

import inspect

import pytest

from duequeue import errors
from duequeue.errors import DuequeueError, KeyConflictError
from duequeue.web import openapi, problems

ERRORS = [
    cls
    for _, cls in inspect.getmembers(errors, inspect.isclass)
    if issubclass(cls, DuequeueError) and cls.__module__ == errors.__name__
]


def test_the_errors_module_was_walked() -> None:
    assert len(ERRORS) >= 9 and DuequeueError in ERRORS


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_class_has_its_own_status(cls: type[DuequeueError]) -> None:
    # Its own entry, not its base's: a new class must be placed, as a 4xx or a 5xx, on purpose.
    assert cls in problems.STATUSES, f"{cls.__name__} has no status in duequeue/web/problems.py"
    status, title = problems.STATUSES[cls]
    assert 400 <= status < 600 and title


def test_the_client_s_faults_are_4xx_and_only_what_may_pass_is_503() -> None:
    assert problems.STATUSES[errors.BadInputError][0] == 400
    assert problems.STATUSES[errors.NotFoundError][0] == 404
    assert problems.STATUSES[errors.KeyConflictError][0] == 409
    assert problems.STATUSES[errors.StoreBusyError][0] == 503
    assert problems.STATUSES[errors.ConfigError][0] == 500


def test_a_subclass_elsewhere_has_its_nearest_base_s_status() -> None:
    class Elsewhere(errors.NotFoundError):
        pass

    assert problems.status(Elsewhere("x")) == problems.STATUSES[errors.NotFoundError]


def test_a_key_conflict_names_the_reminder_that_holds_the_key() -> None:
    body = problems.of_error(KeyConflictError("'k' is the key of reminder 7", existing=7))
    assert body["status"] == 409 and body["existing_id"] == 7 and body["field"] == "key"


def test_the_openapi_document_lists_each_route_s_error_statuses() -> None:
    paths = openapi.document(read_only=False)["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            # The token, the role or Host, the throttle, the database: every route.
            assert {"401", "403", "429", "503"} <= codes, (method, path)
            for code in codes - {"200", "201"}:
                content = operation["responses"][code]["content"]
                assert "application/problem+json" in content, (method, path, code)
    add = paths["/api/v1/reminders"]["post"]["responses"]
    assert {"400", "409", "413"} <= set(add)
    assert "existing_id" in add["409"]["description"]
    assert "Retry-After" in add["429"]["headers"] and "Retry-After" in add["503"]["headers"]
    assert "404" in paths["/api/v1/reminders/{id}"]["get"]["responses"]
    assert "400" in paths["/api/v1/reminders"]["get"]["responses"]
    assert "404" in paths["/api/v1/reminders/{id}/cancel"]["post"]["responses"]
