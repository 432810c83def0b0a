"""Project-level pages that belong to no single app: the home page."""

from django.shortcuts import render

from catalog.selectors import benchmark_list


def home(request):
    return render(request, "home.html", {"benchmarks": benchmark_list()})
