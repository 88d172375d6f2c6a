from django.urls import path

from checks import views

app_name = "checks"

urlpatterns: list = []
