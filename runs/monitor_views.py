"""Pages for live tasks, monitors and evaluations (being built: issue 8)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def task_list(request: HttpRequest) -> HttpResponse:
    return render(request, "monitors/task_list.html", {})


@login_required
def monitor_list(request: HttpRequest) -> HttpResponse:
    return render(request, "monitors/monitor_list.html", {})
