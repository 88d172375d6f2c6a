from django.urls import path

from reviews import views

app_name = "reviews"

urlpatterns = [
    path("", views.queue_list, name="queue-list"),
    path("send/", views.send, name="send"),
    path("<int:pk>/", views.queue_detail, name="queue-detail"),
    path("<int:pk>/start/", views.queue_start, name="queue-start"),
    path("<int:pk>/items/<int:item_pk>/", views.item_review, name="item-review"),
    path("<int:pk>/items/<int:item_pk>/label/", views.item_label, name="item-label"),
    path("checks/<int:check_pk>/calibration/", views.check_calibration, name="check-calibration"),
    path("checks/<int:check_pk>/examples/", views.promote, name="check-promote"),
]
