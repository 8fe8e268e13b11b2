import HealthCards
print("x")
