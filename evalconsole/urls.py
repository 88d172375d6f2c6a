from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from teams import team_views, views

handler500 = "core.views.server_error"  # the console's layout, with no query (the database may be down)

# The API first: most requests are API requests, and Django tries these in order (no other route starts
# with "api/", so the order answers no path differently).
urlpatterns = [
    path("api/", include("evalconsole.api_urls")),
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("teams/switch/", views.switch_team, name="team-switch"),
    path("team/", team_views.team_detail, name="team-detail"),
    path("team/<int:pk>/", team_views.team_detail, name="team-detail"),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("admin/", admin.site.urls),
    path("agents/", include("agents.urls")),
    path("checks/", include("checks.urls")),
    path("runs/", include("runs.urls")),
    path("", include("monitors.urls")),
    path("reviews/", include("reviews.urls")),
    path("scenes/", include("worlds.page_urls")),
    path("worlds/", include("worlds.urls")),
]
